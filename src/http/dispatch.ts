/**
 * From a request context to its answer: the route's handler, run with the
 * failure rendering every route shares (a failure in the caller's envelope, an
 * unexpected defect as a 500, never a request without an answer). The HTTP
 * edge runs it per connection request; requests made without HTTP (the
 * library, batch jobs) build the same context and run exactly the same program.
 */
import { Cause, Effect } from "effect"
import type * as Http from "node:http"
import { randomUUID } from "node:crypto"
import { clip } from "../domain/index.ts"
import { bodyReply, failureReply, JSON_CONTENT_TYPE, withServerSpan } from "../pipeline/index.ts"
import type { JsonLog, RequestContext, TelemetryShape } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import type { Router } from "./router.ts"
import { writeReply, writeWhole } from "./write-reply.ts"

/** A gateway error body of the edge itself (no route, shutting down, a defect) in the caller's envelope. */
export const errorBody = (ctx: RequestContext, status: number, code: string, message: string): string =>
  ctx.caller === "anthropic"
    ? JSON.stringify({
      type: "error",
      error: { type: status >= 500 ? "api_error" : status === 404 ? "not_found_error" : "invalid_request_error", message, code },
      request_id: ctx.requestId
    })
    : JSON.stringify({ error: { message, type: status >= 500 ? "api_error" : "invalid_request_error", param: null, code } })

const REQUEST_ID = /^[\w.:\-]{1,128}$/

/** The caller's `x-request-id` when it is a sane one, else a fresh id. */
const requestIdOf = (headers: Http.IncomingHttpHeaders): string => {
  const sent = headers["x-request-id"]
  return typeof sent === "string" && REQUEST_ID.test(sent) ? sent : randomUUID()
}

/** The envelope an error gets before a handler knows better: from `x-genai-sdk`, else the path. */
const callerOf = (headers: Http.IncomingHttpHeaders, path: string): "openai" | "anthropic" => {
  const sdk = headers["x-genai-sdk"]
  if (sdk === "anthropic") return "anthropic"
  if (sdk === "openai" || sdk === "azure") return "openai"
  return path.startsWith("/v1/messages") ? "anthropic" : "openai"
}

/**
 * The context a request starts with, over HTTP or in memory: path and query
 * split from `url`, its id, and the envelope its errors get.
 */
export const requestContextOf = (req: Http.IncomingMessage, res: Http.ServerResponse, method: string, url: string): HttpRequestContext => {
  const queryAt = url.indexOf("?")
  const path = queryAt === -1 ? url : url.slice(0, queryAt)
  return {
    req,
    res,
    requestId: requestIdOf(req.headers),
    startedAt: performance.now(),
    method,
    path,
    query: queryAt === -1 ? "" : url.slice(queryAt),
    params: {},
    caller: callerOf(req.headers, path),
    replyHeaders: undefined,
    // Present from the start, so noting them later does not change the context's shape.
    callerKey: undefined,
    settle: undefined,
    log: {}
  }
}

/** How the edge traces a request: the caller's trace context and the sampling decision. */
export type EdgeTracing = Pick<TelemetryShape, "tracing" | "genAi" | "samples" | "parentOf">

/**
 * The request's program: 404 or 405 when no route takes it, else its handler,
 * whose `Reply` (or failure, rendered) the edge's writer puts on the response.
 * It never fails; after it the response has an answer (or was cut, for a
 * failure in the middle of a stream).
 *
 * With telemetry on, the caller's trace is noted on `ctx.traceParent`; a
 * request the telemetry samples (`ctx.traced`) runs in its server span
 * (outermost, so the status it records is the one written) and must be run
 * with the telemetry's `requestContext`; any other with tracing off.
 */
export const routeProgram = <R>(router: Router<R>, ctx: HttpRequestContext, log: JsonLog, tracing?: EdgeTracing): Effect.Effect<void, never, R> => {
  const { res, path } = ctx
  const match = router.match(ctx.method, path)
  if (match._tag === "NotFound") {
    return Effect.sync(() => writeWhole(ctx, bodyReply(ctx, 404, errorBody(ctx, 404, "not_found", `no route for ${clip(ctx.method)} ${clip(path)}`), JSON_CONTENT_TYPE)))
  }
  if (match._tag === "MethodNotAllowed") {
    return Effect.sync(() =>
      writeWhole(
        ctx,
        bodyReply(ctx, 405, errorBody(ctx, 405, "method_not_allowed", `${clip(ctx.method)} is not allowed on ${clip(path)}; allowed: ${match.allow}`), JSON_CONTENT_TYPE, {
          allow: match.allow
        })
      )
    )
  }
  ctx.params = match.params
  const program = match.handler(ctx).pipe(
    Effect.matchCauseEffect({
      onSuccess: (answer) => (answer._tag === "Sent" ? Effect.void : writeReply(ctx, answer)),
      onFailure: (cause) =>
        Effect.sync(() => {
          const failure = cause.reasons.length === 1 && cause.reasons[0]._tag === "Fail" ? cause.reasons[0].error : undefined
          if (failure !== undefined) return writeWhole(ctx, failureReply(ctx, failure))
          if (Cause.hasInterruptsOnly(cause)) return
          log.log("error", "unhandled failure", { request_id: ctx.requestId, path: clip(path), cause: Cause.pretty(cause) })
          if (!res.headersSent) {
            writeWhole(ctx, bodyReply(ctx, 500, errorBody(ctx, 500, "internal_error", "internal gateway error"), JSON_CONTENT_TYPE))
          } else {
            res.destroy()
          }
        })
    }),
    Effect.ensuring(Effect.sync(() => {
      // The request's limits are settled with what its log line now says it used (over HTTP or in memory).
      if (ctx.settle !== undefined) ctx.settle()
      if (!res.headersSent && !res.destroyed) {
        writeWhole(ctx, bodyReply(ctx, 500, errorBody(ctx, 500, "internal_error", "handler produced no response"), JSON_CONTENT_TYPE))
      }
    }))
  )
  if (tracing === undefined || !(tracing.tracing || tracing.genAi.enabled)) return program
  const parent = tracing.parentOf(ctx.req.headers)
  ctx.traceParent = parent
  if (!tracing.samples(parent)) return program
  ctx.traced = true
  return withServerSpan({ method: ctx.method, route: match.route, path, requestId: ctx.requestId, parent, status: () => res.statusCode })(program)
}
