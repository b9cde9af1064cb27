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
import { clip, onExitInPlace } from "../domain/index.ts"
import type { Scope } from "effect"
import { bodyReply, failureReply, JSON_CONTENT_TYPE, withServerSpan } from "../pipeline/index.ts"
import type { JsonLog, Reply, RequestContext, TelemetryShape } from "../pipeline/index.ts"
import type { EdgeContext, HttpRequestContext } from "./context.ts"
import type { Match, Router } from "./router.ts"
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
 * split from `url`, its id, and the envelope its errors get. A request served
 * on a socket has its response (`res`); one made in memory has none.
 */
export function requestContextOf(req: Http.IncomingMessage, res: Http.ServerResponse, method: string, url: string): EdgeContext
export function requestContextOf(req: Http.IncomingMessage, res: undefined, method: string, url: string): HttpRequestContext
export function requestContextOf(req: Http.IncomingMessage, res: Http.ServerResponse | undefined, method: string, url: string): HttpRequestContext {
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
    endpoint: undefined,
    params: {},
    caller: callerOf(req.headers, path),
    replyHeaders: undefined,
    // Present from the start, so noting them later does not change the context's shape
    // (the trace fields too: with telemetry on, a shape per sampling decision would make
    // every read of the context polymorphic).
    callerKey: undefined,
    settle: undefined,
    traceParent: undefined,
    traced: undefined,
    log: {}
  } as HttpRequestContext
}

/** How the edge traces a request: the caller's trace context and the sampling decision. */
export type EdgeTracing = Pick<TelemetryShape, "tracing" | "genAi" | "samples" | "parentOf">

/**
 * The request's answer: 404 or 405 when no route takes it, else its handler's
 * `Reply`, a failure rendered in the caller's envelope, an unexpected defect
 * a logged 500. It never fails (a request interrupted stays interrupted); it
 * runs in the request's `Scope`, which holds an answer's upstream until its
 * body is read.
 */
export const answerOf = <R>(match: Match<R>, ctx: HttpRequestContext, log: JsonLog): Effect.Effect<Reply, never, R | Scope.Scope> => {
  const { path } = ctx
  if (match._tag === "NotFound") {
    return Effect.succeed(bodyReply(ctx, 404, errorBody(ctx, 404, "not_found", `no route for ${clip(ctx.method)} ${clip(path)}`), JSON_CONTENT_TYPE))
  }
  if (match._tag === "MethodNotAllowed") {
    return Effect.succeed(bodyReply(ctx, 405, errorBody(ctx, 405, "method_not_allowed", `${clip(ctx.method)} is not allowed on ${clip(path)}; allowed: ${match.allow}`), JSON_CONTENT_TYPE, {
      allow: match.allow
    }))
  }
  ctx.params = match.params
  ctx.endpoint = match.route
  return Effect.catchCause(match.handler(ctx), (cause) => {
    const failure = cause.reasons.length === 1 && cause.reasons[0]._tag === "Fail" ? cause.reasons[0].error : undefined
    if (failure !== undefined) return Effect.succeed(failureReply(ctx, failure))
    if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
    log.log("error", "unhandled failure", { request_id: ctx.requestId, path: clip(path), cause: Cause.pretty(cause) })
    return Effect.succeed(bodyReply(ctx, 500, errorBody(ctx, 500, "internal_error", "internal gateway error"), JSON_CONTENT_TYPE))
  })
}

/**
 * Runs `program` as the edge traces a request: with telemetry on, the
 * caller's trace is noted on `ctx.traceParent`; a request the telemetry
 * samples (`ctx.traced`) runs in its server span (outermost, so the status it
 * records is the one answered) and must be run with the telemetry's
 * `requestContext`; any other with tracing off.
 */
export const traceRequest = <A, E, R>(
  ctx: HttpRequestContext,
  route: string | undefined,
  tracing: EdgeTracing | undefined,
  status: () => number,
  program: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  route !== undefined && sampleRequest(ctx, tracing)
    ? withServerSpan({ method: ctx.method, route, path: ctx.path, requestId: ctx.requestId, parent: ctx.traceParent, status })(program)
    : program

/** With telemetry on, notes the caller's trace on `ctx.traceParent` and whether the request is traced (`ctx.traced`, also returned). */
const sampleRequest = (ctx: HttpRequestContext, tracing: EdgeTracing | undefined): boolean => {
  if (tracing === undefined || !(tracing.tracing || tracing.genAi.enabled)) return false
  const parent = tracing.parentOf(ctx.req.headers)
  ctx.traceParent = parent
  if (!tracing.samples(parent)) return false
  ctx.traced = true
  return true
}

/**
 * The request's program on a socket: its answer, put on the response by the
 * edge's writer. It never fails; after it the response has an answer (or was
 * cut, for a failure in the middle of a stream). With telemetry on, the
 * caller's trace is noted on `ctx.traceParent`; a request the telemetry
 * samples (`ctx.traced`, its route on `ctx.endpoint`) must be run with the
 * telemetry's `requestContext` in its server span, which the caller starts
 * before the request's fiber and ends with its exit (server.ts, `startServerSpan`).
 */
export const routeProgram = <R>(router: Router<R>, ctx: EdgeContext, log: JsonLog, tracing?: EdgeTracing): Effect.Effect<void, never, Exclude<R, Scope.Scope>> => {
  const { res } = ctx
  const match = router.match(ctx.method, ctx.path)
  const program = answerOf(match, ctx, log).pipe(
    Effect.flatMap((reply) => writeReply(ctx, reply)),
    // The request's scope: an attempt's upstream lives in it until the reply that reads it is written (or never is).
    Effect.scoped,
  )
  // However it ended, told in place: nothing left to run.
  const settled = onExitInPlace(program, () => {
    // The request's limits are settled with what its log line now says it used (over HTTP or in memory).
    if (ctx.settle !== undefined) ctx.settle(res.statusCode)
    if (!res.headersSent && !res.destroyed) {
      writeWhole(ctx, bodyReply(ctx, 500, errorBody(ctx, 500, "internal_error", "handler produced no response"), JSON_CONTENT_TYPE))
    }
    return undefined
  })
  // A traced request's fiber is run in its server span by the edge (server.ts, `startServerSpan`): nothing wraps the program.
  if (match._tag === "Found" && sampleRequest(ctx, tracing)) ctx.endpoint = match.route
  return settled
}
