/**
 * Counter and histogram families that cost a request a map lookup and a few
 * additions. prom-client's own `Counter.inc` and `Histogram.observe` validate
 * and hash the label set on every call (~2.6 µs a request for the gateway's
 * metrics, measured); these keep one cell per label combination, keyed by a
 * string the caller builds (`at(key) ?? create(key, labelValues)`: the label
 * values are made only for a new combination), and hand prom-client's registry the same
 * `MetricObject` its own metrics give (`get()`), so the exposition text and
 * the workers' aggregation are prom-client's.
 */
import type { Registry } from "prom-client"

type Labels = Readonly<Record<string, string>>

interface Sample {
  readonly labels: Labels
  readonly value: number
  readonly metricName?: string
}

const labelsOf = (names: ReadonlyArray<string>, values: ReadonlyArray<string>): Labels =>
  Object.fromEntries(names.map((name, i) => [name, values[i]]))

/** What prom-client's registry reads of a metric. */
abstract class Family<Cell> {
  readonly aggregator = "sum"
  readonly name: string
  readonly help: string
  readonly type: "counter" | "histogram"
  private readonly labelNames: ReadonlyArray<string>
  private readonly cells = new Map<string, Cell>()

  constructor(name: string, help: string, type: "counter" | "histogram", labelNames: ReadonlyArray<string>, registry: Registry) {
    this.name = name
    this.help = help
    this.type = type
    this.labelNames = labelNames
    registry.registerMetric(this as never)
  }

  /** The cell of a label combination seen before. */
  at(key: string): Cell | undefined {
    return this.cells.get(key)
  }

  /** A new combination's cell: `values` in `labelNames` order. */
  create(key: string, values: ReadonlyArray<string>): Cell {
    const cell = this.make(labelsOf(this.labelNames, values))
    this.cells.set(key, cell)
    return cell
  }

  protected abstract make(labels: Labels): Cell
  protected abstract samples(cell: Cell): Array<Sample>

  get() {
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...this.cells.values()].flatMap((cell) => this.samples(cell))
    })
  }
}

export interface CounterCell {
  readonly labels: Labels
  value: number
}

export class CounterFamily extends Family<CounterCell> {
  constructor(name: string, help: string, labelNames: ReadonlyArray<string>, registry: Registry) {
    super(name, help, "counter", labelNames, registry)
  }

  protected make(labels: Labels): CounterCell {
    return { labels, value: 0 }
  }

  protected samples(cell: CounterCell): Array<Sample> {
    return [{ labels: cell.labels, value: cell.value }]
  }
}

export interface HistogramCell {
  readonly labels: Labels
  /** Observations per bucket (not cumulative); the last one is `+Inf`. */
  readonly counts: Float64Array
  sum: number
  count: number
}

export class HistogramFamily extends Family<HistogramCell> {
  private readonly bounds: ReadonlyArray<number>

  constructor(name: string, help: string, labelNames: ReadonlyArray<string>, bounds: ReadonlyArray<number>, registry: Registry) {
    super(name, help, "histogram", labelNames, registry)
    this.bounds = bounds
  }

  observe(cell: HistogramCell, value: number): void {
    let bucket = 0
    while (bucket < this.bounds.length && value > this.bounds[bucket]) bucket++
    cell.counts[bucket]++
    cell.sum += value
    cell.count++
  }

  protected make(labels: Labels): HistogramCell {
    return { labels, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }
  }

  protected samples(cell: HistogramCell): Array<Sample> {
    const bucketName = `${this.name}_bucket`
    let cumulative = 0
    const buckets = [...this.bounds, "+Inf"].map((bound, i): Sample => {
      cumulative += cell.counts[i]
      return { labels: { ...cell.labels, le: String(bound) }, value: cumulative, metricName: bucketName }
    })
    return [
      ...buckets,
      { labels: cell.labels, value: cell.sum, metricName: `${this.name}_sum` },
      { labels: cell.labels, value: cell.count, metricName: `${this.name}_count` }
    ]
  }
}
