/**
 * Per-request state shared by the HTTP edge and the handlers: the raw Node
 * request/response, the request id, the caller's wire family (for error
 * envelopes) and the fields of the one log line written when the response ends.
 */
import type { IncomingHttpHeaders } from "node:http"
import type { Socket } from "node:net"
import type { CallerFormat, WireFamily } from "../domain/index.ts"
import type { Tracer } from "effect"
import type { ExportCredential } from "./telemetry/settings.ts"
import type { CallerKey } from "../tenancy/gateway-keys.ts"

/** Everything the per-request log line reports beyond method, path, status and latency. */
export interface RequestLogFields {
  provider?: string
  model?: string
  upstream_model?: string
  attempts?: number
  stream?: boolean
  path_kind?: "fast" | "normalized"
  cache?: string
  variant?: string
  finish_reason?: string
  input_tokens?: number
  output_tokens?: number
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

/**
 * The response as the pipeline writes it: a Node `ServerResponse`, or the
 * in-memory response of a request run without HTTP (`MemoryResponse`).
 */
export interface CallerResponse {
  readonly headersSent: boolean
  readonly destroyed: boolean
  readonly writableEnded: boolean
  readonly writableFinished: boolean
  statusCode: number
  readonly socket?: Socket | null
  writeHead(status: number, headers: Array<string>): unknown
  write(chunk: string | Uint8Array): boolean
  end(chunk?: string | Uint8Array): unknown
  destroy(): unknown
  once(event: "drain" | "close", listener: () => void): unknown
  off(event: "drain" | "close", listener: () => void): unknown
}

export interface RequestContext {
  readonly req: CallerRequest
  readonly res: CallerResponse
  readonly requestId: string
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number
  readonly method: string
  /** Path without the query string. */
  readonly path: string
  /** Raw query string including `?`, or "". */
  readonly query: string
  /** Path parameters of the matched route (`{model_id}` …, `*` for a passthrough rest). */
  params: Readonly<Record<string, string>>
  /** Decides the error envelope; handlers set it once the caller's format is known. */
  caller: WireFamily
  /** The format of the event stream being written, once one is committed (its error frame's format). */
  streamFormat?: CallerFormat | undefined
  /** The platform token of the request (`[auth]`): the credential its GenAI telemetry is exported with. */
  exportCredential?: ExportCredential | undefined
  /** The gateway key the request authenticated with (`[keys]`); undefined when the gateway is open. */
  callerKey?: CallerKey | undefined
  /** Settles the request's admission (frees its slot, counts its tokens and cost): called once, when the request ends. */
  settle?: (() => void) | undefined
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
