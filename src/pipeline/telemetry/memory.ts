/**
 * The test sinks of `Telemetry.layerTest`: every export kept in memory as
 * the encoded request a collector would receive, each span handed over the
 * moment it ends, and read back decoded (otlp/decode.ts), so tests see
 * exactly what a collector would. GenAI spans and metrics are labelled with
 * the fingerprint of the credential they would be exported with (`static`
 * for the configured bearer token), so tests can see the grouping.
 */
import { decodeMetricsRequest, decodeTraceRequest } from "../../otlp/decode.ts"
import type { DecodedSpan } from "../../otlp/decode.ts"
import type { ExportCredential, SendExport, TelemetrySinks } from "./settings.ts"

export type { DecodedSpan } from "../../otlp/decode.ts"

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

const labelOf = (credential: ExportCredential | undefined): string => credential?.fingerprint ?? "static"

export class TelemetryMemory implements TelemetrySinks {
  private app: Array<Buffer> = []
  private genAiTraces: Array<{ readonly credential: string; readonly request: Buffer }> = []
  private readonly collectors = new Set<{ readonly credential: string; readonly collect: () => Buffer | undefined }>()

  readonly immediate = true

  readonly appTraces: SendExport = (request) => {
    this.app.push(request)
    return Promise.resolve()
  }

  readonly genAi = (credential: ExportCredential | undefined, signal: "traces" | "metrics"): SendExport => {
    const label = labelOf(credential)
    return (request) => {
      if (signal === "traces") this.genAiTraces.push({ credential: label, request })
      return Promise.resolve()
    }
  }

  readonly collectOnDemand = (credential: ExportCredential | undefined, collect: () => Buffer | undefined) => {
    const entry = { credential: labelOf(credential), collect }
    this.collectors.add(entry)
    return () => {
      this.collectors.delete(entry)
    }
  }

  readonly close = () => {}

  /** Finished application spans, in the order they ended. */
  appSpans(): ReadonlyArray<DecodedSpan> {
    return this.app.flatMap(decodeTraceRequest)
  }

  /** Finished GenAI spans with the credential label of their pipeline. */
  genAiSpans(): ReadonlyArray<{ readonly credential: string; readonly span: DecodedSpan }> {
    return this.genAiTraces.flatMap(({ credential, request }) => decodeTraceRequest(request).map((span) => ({ credential, span })))
  }

  /** Every histogram point recorded so far (cumulative), across the GenAI pipelines still open. */
  async histograms(): Promise<ReadonlyArray<RecordedHistogram>> {
    const out: Array<RecordedHistogram> = []
    for (const { credential, collect } of this.collectors) {
      const request = collect()
      if (request === undefined) continue
      for (const point of decodeMetricsRequest(request)) {
        out.push({
          name: point.metric,
          unit: point.unit,
          credential,
          attributes: point.attributes,
          count: point.count ?? 0,
          sum: point.sum ?? 0,
          boundaries: point.bounds ?? []
        })
      }
    }
    return out
  }

  reset(): void {
    this.app = []
    this.genAiTraces = []
  }
}
