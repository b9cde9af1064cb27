/**
 * What the metrics stage offers the edge and the router: the recorder of a
 * finished request (from its log fields), the scrape, and the gauges read
 * when scraped. `Metrics.ts` is the service, `live.ts` the prom-client one.
 */
import type { Effect } from "effect"

/** The fields of a request's log line that metrics read (the pipeline's `RequestLogFields` has them). */
export interface RequestFields {
  readonly provider?: string | undefined
  readonly model?: string | undefined
  readonly route?: string | undefined
  readonly attempts?: number | undefined
  readonly retries?: number | undefined
  readonly failovers?: number | undefined
  /** Hedges started (`hedge_after_ms`): the provider and model of each, and whether it answered. */
  readonly hedges?: ReadonlyArray<{ readonly provider: string; readonly model: string; readonly outcome: string }> | undefined
  readonly cache?: string | undefined
  /** A broken stream continued on another target: `ok` or `failed`, and where (the log line's `continued`, `continued_on`). */
  readonly continued?: "ok" | "failed" | undefined
  readonly continued_on?: string | undefined
  readonly input_tokens?: number | undefined
  readonly output_tokens?: number | undefined
  readonly cached_tokens?: number | undefined
  readonly reasoning_tokens?: number | undefined
  readonly ttft_ms?: number | undefined
  readonly error_code?: string | undefined
  readonly guardrail?: string | undefined
  readonly guardrail_output?: string | undefined
  /** USD of every attempt at the configured prices. */
  readonly cost_usd?: number | undefined
  /** The limits stage's word on the request: refused by the gateway, or admitted uncounted (its store down). */
  readonly limits?: "refused" | "uncounted" | undefined
  /** The Responses store's word on the request: its answer kept, its write failed, or its state unreadable (store down). */
  readonly responses_store?: "stored" | "unstored" | "unavailable" | undefined
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
