/**
 * Explicit-bucket histograms, aggregated in place and encoded as OTLP
 * `Metric`s (opentelemetry/proto/metrics/v1) with cumulative temporality.
 *
 * A series (one attribute set of one instrument) is made once and kept by
 * the caller; recording a value is a bucket search and a few additions:
 * nothing is hashed, sorted or copied per record.
 */
import { writeAttributes } from "./common.ts"
import type { ProtoWriter } from "./protobuf.ts"

const METRICS_FIELD = 2
const CUMULATIVE = 2

/** One attribute set's histogram. */
export class Series {
  readonly attributes: Readonly<Record<string, unknown>>
  readonly buckets: Float64Array
  private readonly bounds: Float64Array
  count = 0
  sum = 0
  min = Number.POSITIVE_INFINITY
  max = Number.NEGATIVE_INFINITY

  constructor(attributes: Readonly<Record<string, unknown>>, bounds: Float64Array) {
    this.attributes = attributes
    this.bounds = bounds
    this.buckets = new Float64Array(bounds.length + 1)
  }

  add(value: number): void {
    const bounds = this.bounds
    // The first bucket whose upper bound is at least `value` (bounds are inclusive upper limits).
    let bucket = 0
    while (bucket < bounds.length && value > bounds[bucket]) bucket++
    this.buckets[bucket]++
    this.count++
    this.sum += value
    if (value < this.min) this.min = value
    if (value > this.max) this.max = value
  }
}

export interface HistogramDescriptor {
  readonly name: string
  readonly unit: string
  readonly description: string
  readonly boundaries: ReadonlyArray<number>
}

/** One histogram instrument and its series. */
export class HistogramInstrument {
  readonly descriptor: HistogramDescriptor
  private readonly series: Array<Series> = []
  private readonly bounds: Float64Array

  constructor(descriptor: HistogramDescriptor) {
    this.descriptor = descriptor
    this.bounds = Float64Array.from(descriptor.boundaries)
  }

  /** A new series of `attributes` (the caller keeps it and records into it). */
  newSeries(attributes: Readonly<Record<string, unknown>>): Series {
    const series = new Series(attributes, this.bounds)
    this.series.push(series)
    return series
  }

  get size(): number {
    return this.series.length
  }

  /**
   * The instrument as one `Metric` (field 2 of `ScopeMetrics`), all series at
   * `timeNs`, counted from `startNs`; nothing when no series recorded a value
   * (a `Metric` with no data points says nothing).
   */
  write(w: ProtoWriter, startNs: bigint, timeNs: bigint): void {
    if (!this.series.some((series) => series.count > 0)) return
    const { descriptor } = this
    const metric = w.begin(METRICS_FIELD)
    w.stringField(1, descriptor.name)
    if (descriptor.description !== "") w.stringField(2, descriptor.description)
    w.stringField(3, descriptor.unit)
    const histogram = w.begin(9)
    for (const series of this.series) {
      if (series.count === 0) continue
      const point = w.begin(1)
      w.fixed64Field(2, startNs)
      w.fixed64Field(3, timeNs)
      w.fixed64Field(4, BigInt(series.count))
      w.doubleField(5, series.sum)
      const counts = w.begin(6)
      w.ensure(series.buckets.length * 8)
      for (const count of series.buckets) {
        w.buf.writeBigUInt64LE(BigInt(count), w.pos)
        w.pos += 8
      }
      w.end(counts)
      const bounds = w.begin(7)
      w.ensure(this.bounds.length * 8)
      for (const bound of this.bounds) {
        w.buf.writeDoubleLE(bound, w.pos)
        w.pos += 8
      }
      w.end(bounds)
      writeAttributes(w, 9, series.attributes)
      w.doubleField(11, series.min)
      w.doubleField(12, series.max)
      w.end(point)
    }
    w.uintField(2, CUMULATIVE)
    w.end(histogram)
    w.end(metric)
  }
}
