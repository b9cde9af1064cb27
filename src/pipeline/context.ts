/**
 * Per-request state shared by the HTTP edge and the handlers: the request as
 * the pipeline reads it, the request id, the caller's wire family (for error
 * envelopes) and the fields of the one log line written when the response
 * ends. No response: a program answers with a `Reply` (./reply.ts), which the
 * edge writes, or the library hands to its caller.
 */
import type { IncomingHttpHeaders } from "node:http"
import type { WireFamily } from "../domain/index.ts"
import type { Tracer } from "effect"
import type { ExportCredential } from "./telemetry/settings.ts"
import type { CallerKey } from "../tenancy/gateway-keys.ts"

/** A hedge a request started: the target started beside a slow one, and whether its answer was the one sent. */
export interface HedgeNote {
  readonly target: string
  readonly provider: string
  readonly model: string
  readonly outcome: "won" | "lost"
}

/** Everything the per-request log line reports beyond method, path, status and latency. */
export interface RequestLogFields {
  provider?: string
  /** The model asked for, once it resolved (a configured name, never an unknown one). */
  model?: string
  /** The plan it resolved to: `route::smart`, `function::summarize`, `openai::gpt-4o`. */
  route?: string
  upstream_model?: string
  attempts?: number
  /** Attempts that tried the same target again. */
  retries?: number
  /** Attempts that moved on to another target. */
  failovers?: number
  /** Hedges started (`hedge_after_ms`): each one's target, provider and model, and whether it answered. */
  hedges?: Array<HedgeNote>
  stream?: boolean
  path_kind?: "fast" | "normalized"
  cache?: string
  variant?: string
  finish_reason?: string
  input_tokens?: number
  output_tokens?: number
  /** Input tokens read from the provider's prompt cache. */
  cached_tokens?: number
  reasoning_tokens?: number
  /** Milliseconds from the request's arrival to the answer's first token. */
  ttft_ms?: number
  /** A committed stream that broke and was continued elsewhere (`on_stream_break = "continue"`): `ok`, or `failed` (it ended with the error frame). */
  continued?: "ok" | "failed"
  /** The provider the stream was last continued on. */
  continued_on?: string
  /** USD of every attempt's usage at its model's price; absent when nothing could be priced. */
  cost_usd?: number
  error_code?: string
  dropped_params?: string
  /** The category an input guardrail refused the request for (never the text). */
  guardrail?: string
  /** The category an output guardrail found in the answer (streams: recorded only). */
  guardrail_output?: string
  /** The name of the gateway key the request authenticated with (never the key). */
  key?: string
  /** The limits stage: `refused` (over a limit), `uncounted` (admitted while the store was unreachable). */
  limits?: "refused" | "uncounted"
  /**
   * The Responses store: `stored` (the answer kept under its id), `unstored` (its write failed, or it was too
   * large to keep: answered anyway), `unavailable` (state the request needed could not be read: 503).
   */
  responses_store?: "stored" | "unstored" | "unavailable"
}

/**
 * The request as the pipeline reads it: its headers, and whether its body has
 * all arrived. A Node `IncomingMessage` is one; a request run without HTTP (a
 * batch line, a library call) brings its own.
 */
export interface CallerRequest {
  readonly headers: IncomingHttpHeaders
  readonly complete: boolean
}

export interface RequestContext {
  readonly req: CallerRequest
  readonly requestId: string
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number
  readonly method: string
  /** Path without the query string. */
  readonly path: string
  /** Raw query string including `?`, or "". */
  readonly query: string
  /** The matched route's template (`/v1/files/{file_id}`), once the route matched. */
  endpoint?: string | undefined
  /** Path parameters of the matched route (`{model_id}` …, `*` for a passthrough rest). */
  params: Readonly<Record<string, string>>
  /** Decides the error envelope; handlers set it once the caller's format is known. */
  caller: WireFamily
  /** A reader wants a streamed chat answer's canonical events (the library): the reply carries them (`Reply.events`). */
  tapEvents?: boolean | undefined
  /**
   * Ends the committed event stream being written with its error frame (a
   * draining shutdown): set by the commit operator when a stream commits.
   */
  stopStream?: (() => void) | undefined
  /** The platform token of the request (`[auth]`): the credential its GenAI telemetry is exported with. */
  exportCredential?: ExportCredential | undefined
  /** The gateway key the request authenticated with (`[keys]`); undefined when the gateway is open. */
  callerKey?: CallerKey | undefined
  /** Settles the request's admission (frees its slot, counts its tokens and cost): called once, when the request ends. */
  settle?: ((status: number) => void) | undefined
  /** The caller's trace (W3C `traceparent`), when telemetry is on and it sent one. */
  traceParent?: Tracer.ExternalSpan | undefined
  /** The request's application trace is recorded (tracing on, the request sampled): its steps get spans. */
  traced?: boolean | undefined
  /**
   * Headers every answer of this request carries, whatever it turns out to be
   * (`x-gw-cache: miss`, `x-gw-variant`), noted by the stages that know them;
   * an answer's own header of the same name wins.
   */
  replyHeaders: Record<string, string> | undefined
  readonly log: RequestLogFields
}

/** A lower-case request header as a single string. */
export const header = (ctx: RequestContext, name: string): string | undefined => {
  const value = ctx.req.headers[name]
  return Array.isArray(value) ? value[0] : value
}
