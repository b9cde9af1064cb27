/**
 * Requests made without HTTP (the library entry, batch jobs): the same route
 * program as a request that came over a socket, run on an in-memory request,
 * its `Reply` handed over as it is. Routing, retries, stages and error
 * rendering are the ones the server runs; only the socket is missing.
 *
 * Details
 * - The answer's head is ready when the program answers; a streamed body is
 *   the reply's own stream, pulled by its reader (a reader that falls behind
 *   pauses the upstream, as a slow HTTP caller would).
 * - Interrupting the body stream stops the request (its upstream is aborted).
 * - A body that fails after the head (a non-SSE body cut in the middle) ends
 *   the body stream with a failure.
 */
import { Effect, Exit, Scope, Stream } from "effect"
import type { IncomingHttpHeaders, IncomingMessage } from "node:http"
import { Readable } from "node:stream"
import { isValueBody, pushHeaders } from "../pipeline/index.ts"
import type { JsonLog, Reply } from "../pipeline/index.ts"
import type { ChatStreamEvent } from "../domain/index.ts"
import type { HttpRequestContext } from "./context.ts"
import { answerOf, requestContextOf, traceRequest } from "./dispatch.ts"
import type { EdgeTracing } from "./dispatch.ts"
import type { Router } from "./router.ts"

export interface LocalRequest {
  readonly method: string
  /** Path and query, as on the wire: `/v1/chat/completions`. */
  readonly path: string
  /** Header names in any case; a JSON body needs `content-type: application/json`. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: string | Uint8Array | undefined
}

export interface LocalResponse {
  readonly status: number
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>
  /** The body as the gateway writes it; fails when the response was cut. */
  readonly body: Stream.Stream<Uint8Array, LocalResponseCut>
  /**
   * A streamed chat answer's canonical events, as the gateway decoded them
   * from the upstream (never parsed back from `body`); read either this or
   * `body`, not both (they are one answer).
   */
  readonly events: Stream.Stream<ChatStreamEvent, LocalResponseCut> | undefined
}

/** A response that ended abruptly after its head (what an HTTP caller sees as a dropped connection). */
export class LocalResponseCut extends Error {
  override readonly name = "LocalResponseCut"
}

const encoder = new TextEncoder()

/** The in-memory request: the body as a readable stream, the headers in lower case. */
const memoryRequest = (request: LocalRequest): IncomingMessage => {
  const headers: IncomingHttpHeaders = {}
  for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value
  const body = request.body === undefined ? undefined : typeof request.body === "string" ? encoder.encode(request.body) : request.body
  if (body !== undefined) headers["content-length"] = String(body.byteLength)
  const stream = Readable.from(body === undefined || body.byteLength === 0 ? [] : [Buffer.from(body.buffer, body.byteOffset, body.byteLength)], { objectMode: false })
  const req = Object.assign(stream, { headers, method: request.method, url: request.path, complete: false })
  stream.once("end", () => (req.complete = true))
  // The pipeline reads headers, `complete` and the body stream: the rest of IncomingMessage is never used.
  return req as unknown as IncomingMessage
}

/** The head as the writer would put it on a socket, as one record: lower-case names, repeated ones joined. */
const headOf = (ctx: HttpRequestContext, reply: Reply): Record<string, string> => {
  const { body } = reply
  const flat: Array<string> = []
  if (isValueBody(body)) flat.push("content-length", String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength))
  pushHeaders(flat, reply.headers, ctx.replyHeaders, flat.length > 0)
  flat.push("x-request-id", ctx.requestId)
  const headers: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i].toLowerCase()
    headers[name] = headers[name] === undefined ? flat[i + 1] : `${headers[name]}, ${flat[i + 1]}`
  }
  return headers
}

/**
 * Runs one request through the router's program in memory and resolves with
 * its `Reply`, as the library's caller reads it: the head, and the body as a
 * stream (a value body as one chunk). The request's scope stays open until
 * the body stream ends: reading it to its end, or leaving it early, releases
 * the upstream.
 */
export const runLocal = <R>(router: Router<R>, log: JsonLog, request: LocalRequest, tracing?: EdgeTracing): Effect.Effect<LocalResponse, never, Exclude<R, Scope.Scope>> =>
  Effect.suspend(() => {
    const ctx = requestContextOf(memoryRequest(request), undefined, request.method.toUpperCase(), request.path)
    ctx.tapEvents = true
    const match = router.match(ctx.method, ctx.path)
    let status = 200
    // The request's limits are settled with what its log line says it used, once its answer is over.
    const settle = Effect.sync(() => ctx.settle?.(status))
    const answer = Effect.flatMap(Scope.make(), (scope) =>
      Scope.provide(answerOf(match, ctx, log), scope).pipe(
        Effect.onExit((exit) => (Exit.isSuccess(exit) && !isValueBody(exit.value.body) ? Effect.void : Effect.andThen(Scope.close(scope, exit), settle))),
        Effect.map((reply): LocalResponse => {
          status = reply.status
          const { body, events } = reply
          if (isValueBody(body)) {
            return { status, headers: headOf(ctx, reply), body: Stream.succeed(typeof body === "string" ? encoder.encode(body) : body), events: undefined }
          }
          const bytes = body.pipe(
            Stream.mapError(() => new LocalResponseCut("the response was cut after its head")),
            Stream.ensuring(Effect.andThen(Scope.close(scope, Exit.void), settle))
          )
          return {
            status,
            headers: headOf(ctx, reply),
            // Events taken as the bytes go by, read or not: none pile up behind a reader of the bytes.
            body: events === undefined ? bytes : Stream.map(bytes, (chunk) => (events.take(), chunk)),
            events: events === undefined ? undefined : bytes.pipe(Stream.map(() => events.take()), Stream.flattenIterable)
          }
        })
      ))
    const program = traceRequest(ctx, match._tag === "Found" ? match.route : undefined, tracing, () => status, answer)
    // Run in the telemetry's request context: a request it does not trace runs with tracing off.
    return tracing?.tracing === true && ctx.traced !== true ? Effect.withTracerEnabled(program, false) : program
  })

/** A local answer read whole: status, headers and body, or the cut. */
export const readLocal = (response: LocalResponse): Effect.Effect<{ readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: Uint8Array }, LocalResponseCut> =>
  Effect.map(Stream.runCollect(response.body), (chunks) => ({
    status: response.status,
    headers: response.headers,
    body: Buffer.concat([...chunks])
  }))
