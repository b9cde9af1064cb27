/**
 * The Prometheus metrics stage (`[metrics]`): counters and histograms of the
 * requests the gateway served, scraped as Prometheus text at `GET /metrics`
 * (prom-client's registry and exposition format).
 *
 * Details
 * - A request is recorded once, by the edge, when its response closes, from
 *   the fields its log line carries (`RequestFields`): nothing is counted
 *   on the way, so the stages never see this one.
 * - Label sets are bounded: `model`, `route` and `provider` are configured
 *   names only (the pipeline notes a model once it resolved, never a raw
 *   caller string), `endpoint` is the matched route's template
 *   (`/v1/files/{file_id}`, `unmatched` for none), `status` a status code,
 *   `error_class` the error code the log line has (a fixed vocabulary).
 * - The label children of every combination seen are kept in maps, so a
 *   request costs a few map lookups and additions, not prom-client's label
 *   hashing.
 * - Open streams and the dependencies' health are read when scraped (gauges
 *   with `collect`), never per request.
 * - `layerOff` records nothing and loads nothing (prom-client is imported by
 *   `live.ts`, which only `layer` loads); the edge then has no recorder at all.
 */
import { Context, Effect, Layer } from "effect"

/** The fields of a request's log line that metrics read (the pipeline's `RequestLogFields` has them). */
export interface RequestFields {
  readonly provider?: string | undefined
  readonly model?: string | undefined
  readonly route?: string | undefined
  readonly attempts?: number | undefined
  readonly retries?: number | undefined
  readonly failovers?: number | undefined
  readonly cache?: string | undefined
  readonly input_tokens?: number | undefined
  readonly output_tokens?: number | undefined
  readonly cached_tokens?: number | undefined
  readonly reasoning_tokens?: number | undefined
  readonly ttft_ms?: number | undefined
  readonly error_code?: string | undefined
  readonly guardrail?: string | undefined
  readonly guardrail_output?: string | undefined
}

/** A dependency the metrics report as up or down. */
export interface DependencyCheck {
  readonly name: string
  readonly up: () => Promise<boolean>
}

/** Records one finished request: its route template, caller format, status, duration and log fields. */
export type RecordRequest = (endpoint: string, callerFormat: string, status: number, durationMs: number, fields: RequestFields) => void

export interface MetricsShape {
  /** Undefined when metrics are off: the edge records nothing. */
  readonly record: RecordRequest | undefined
  /** The text a scrape gets, and its content type. */
  readonly scrape: Effect.Effect<{ readonly contentType: string; readonly body: string }>
  /** Reports the number of open streams on every scrape (the edge knows them). */
  readonly watchOpenStreams: (count: () => number) => void
  /** Reports whether each named dependency is up (1) or not (0) on every scrape; replaces the checks given before (a reload). */
  readonly watchDependencies: (checks: ReadonlyArray<DependencyCheck>) => void
}

export class Metrics extends Context.Service<Metrics, MetricsShape>()("gateway/pipeline/metrics/Metrics") {
  /** Metrics on: a registry of its own (never prom-client's global one), loaded with the layer. */
  static readonly layer: Layer.Layer<Metrics> = Layer.effect(
    Metrics,
    Effect.map(Effect.promise(() => import("./live.ts")), ({ makeLiveMetrics }) => makeLiveMetrics())
  )

  /** Metrics off: nothing recorded, nothing loaded, `/metrics` not served. */
  static readonly layerOff: Layer.Layer<Metrics> = Layer.succeed(Metrics, {
    record: undefined,
    scrape: Effect.succeed({ contentType: "text/plain", body: "" }),
    watchOpenStreams: () => {},
    watchDependencies: () => {}
  })
}
