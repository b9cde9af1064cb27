/**
 * The test sinks of `Telemetry.layerTest`: every span and metric kept in
 * memory, synchronously, and readable by tests. GenAI spans and metrics are
 * labelled with the fingerprint of the credential they would be exported with
 * (`static` for the configured bearer token), so tests can see the grouping.
 */
import { AggregationTemporality, MetricReader } from "@opentelemetry/sdk-metrics"
import type { DataPoint, Histogram, ResourceMetrics } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base"
import type { ExportCredential, TelemetrySinks } from "./settings.ts"

/** A reader that collects only when asked (`collect`). */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** The exporter without its shutdown (which would forget the spans): tests read them after pipelines close. */
const keeping = (exporter: InMemorySpanExporter): SpanExporter => ({
  export: (spans, done) => exporter.export(spans, done),
  shutdown: () => Promise.resolve()
})

/** One histogram data point, flattened for assertions. */
export interface RecordedHistogram {
  readonly name: string
  readonly unit: string
  /** The credential label of the pipeline that recorded it. */
  readonly credential: string
  readonly attributes: Readonly<Record<string, unknown>>
  readonly count: number
  readonly sum: number
  readonly boundaries: ReadonlyArray<number>
}

export class TelemetryMemory implements TelemetrySinks {
  private readonly app = new InMemorySpanExporter()
  private readonly genAi: Array<{ readonly credential: string; readonly exporter: InMemorySpanExporter }> = []
  private readonly readers: Array<{ readonly credential: string; readonly reader: OnDemandReader }> = []

  readonly appSpanProcessor = () => new SimpleSpanProcessor(keeping(this.app))

  readonly genAiSpanProcessor = (credential: ExportCredential | undefined) => {
    const exporter = new InMemorySpanExporter()
    this.genAi.push({ credential: credential?.fingerprint ?? "static", exporter })
    return new SimpleSpanProcessor(keeping(exporter))
  }

  readonly genAiMetricReader = (credential: ExportCredential | undefined) => {
    const reader = new OnDemandReader()
    this.readers.push({ credential: credential?.fingerprint ?? "static", reader })
    return reader
  }

  /** Finished application spans, in the order they ended. */
  appSpans(): ReadonlyArray<ReadableSpan> {
    return this.app.getFinishedSpans()
  }

  /** Finished GenAI spans with the credential label of their pipeline. */
  genAiSpans(): ReadonlyArray<{ readonly credential: string; readonly span: ReadableSpan }> {
    return this.genAi.flatMap(({ credential, exporter }) => exporter.getFinishedSpans().map((span) => ({ credential, span })))
  }

  /** Every histogram point recorded so far (cumulative), across all GenAI pipelines. */
  async histograms(): Promise<ReadonlyArray<RecordedHistogram>> {
    const out: Array<RecordedHistogram> = []
    for (const { credential, reader } of this.readers) {
      let collected: ResourceMetrics
      try {
        collected = (await reader.collect()).resourceMetrics
      } catch {
        // A pipeline closed since (idle, evicted) has nothing more to say.
        continue
      }
      for (const scope of collected.scopeMetrics) {
        for (const metric of scope.metrics) {
          for (const point of metric.dataPoints as ReadonlyArray<DataPoint<Histogram>>) {
            out.push({
              name: metric.descriptor.name,
              unit: metric.descriptor.unit,
              credential,
              attributes: point.attributes,
              count: point.value.count,
              sum: point.value.sum ?? 0,
              boundaries: point.value.buckets.boundaries
            })
          }
        }
      }
    }
    return out
  }

  reset(): void {
    this.app.reset()
    for (const { exporter } of this.genAi) exporter.reset()
  }
}
