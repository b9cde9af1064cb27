/**
 * Requests made without HTTP (the library entry, batch jobs): the same route
 * program as a request that came over a socket, run against an in-memory
 * request and response. Routing, retries, stages and error rendering are the
 * ones the server runs; only the socket is missing.
 *
 * Details
 * - The answer's head is ready when the program writes it; the body follows as
 *   a stream of the chunks the program writes, with backpressure (a reader that
 *   falls behind pauses the upstream, as a slow HTTP caller would).
 * - Interrupting the body stream stops the request (its upstream is aborted).
 * - A response cut in the middle (a failure after the head on a non-SSE body)
 *   ends the body stream with a failure.
 */
import { Deferred, Effect, Fiber, Queue, Stream } from "effect"
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import type { CallerResponse, JsonLog } from "../pipeline/index.ts"
import { requestContextOf, routeProgram } from "./dispatch.ts"
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
}

/** A response that ended abruptly after its head (what an HTTP caller sees as a dropped connection). */
export class LocalResponseCut extends Error {
  override readonly name = "LocalResponseCut"
}

const HIGH_WATER = 16
const encoder = new TextEncoder()

type Listener = () => void

/** The in-memory response: records the head, queues the body chunks. */
class MemoryResponse implements CallerResponse {
  headersSent = false
  destroyed = false
  writableEnded = false
  writableFinished = false
  statusCode = 200
  readonly socket = undefined
  readonly headers: Record<string, string> = {}
  private readonly listeners = new Map<string, Set<Listener>>()
  private queued = 0
  private readonly onHead: () => void
  private readonly offer: (chunk: Uint8Array | "end" | "cut") => void
  constructor(onHead: () => void, offer: (chunk: Uint8Array | "end" | "cut") => void) {
    this.onHead = onHead
    this.offer = offer
  }

  writeHead(status: number, headers: Array<string>): void {
    this.statusCode = status
    // As Node does: a header given twice in the head repeats.
    const written: Record<string, string> = {}
    for (let i = 0; i + 1 < headers.length; i += 2) {
      const name = headers[i].toLowerCase()
      written[name] = written[name] === undefined ? headers[i + 1] : `${written[name]}, ${headers[i + 1]}`
    }
    Object.assign(this.headers, written)
    this.headersSent = true
    this.onHead()
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.writableEnded || this.destroyed) return false
    if (!this.headersSent) this.writeHead(this.statusCode, [])
    this.queued++
    this.offer(typeof chunk === "string" ? encoder.encode(chunk) : chunk)
    return this.queued < HIGH_WATER
  }

  end(chunk?: string | Uint8Array): void {
    if (this.writableEnded || this.destroyed) return
    if (chunk !== undefined && (typeof chunk === "string" ? chunk.length > 0 : chunk.byteLength > 0)) this.write(chunk)
    if (!this.headersSent) this.writeHead(this.statusCode, [])
    this.writableEnded = true
    this.writableFinished = true
    this.offer("end")
    this.emit("close")
  }

  destroy(): void {
    if (this.destroyed) return
    const cut = !this.writableEnded
    this.destroyed = true
    if (cut) this.offer("cut")
    this.emit("close")
  }

  /** The reader took a chunk: below the high-water mark, a waiting writer may go on. */
  taken(): void {
    this.queued--
    if (this.queued === HIGH_WATER - 1) this.emit("drain")
  }

  once(event: "drain" | "close", listener: Listener): void {
    const wrapped = () => {
      this.off(event, wrapped)
      listener()
    }
    ;(wrapped as { original?: Listener }).original = listener
    this.on(event, wrapped)
  }

  on(event: string, listener: Listener): void {
    let set = this.listeners.get(event)
    if (set === undefined) this.listeners.set(event, (set = new Set()))
    set.add(listener)
  }

  off(event: "drain" | "close", listener: Listener): void {
    const set = this.listeners.get(event)
    if (set === undefined) return
    for (const candidate of set) {
      if (candidate === listener || (candidate as { original?: Listener }).original === listener) set.delete(candidate)
    }
  }

  private emit(event: string): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) listener()
  }
}

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

/**
 * Runs one request through the router's program in memory. Resolves with the
 * answer's head once it is written; the body streams after it.
 */
export const runLocal = <R>(router: Router<R>, log: JsonLog, request: LocalRequest, tracing?: EdgeTracing): Effect.Effect<LocalResponse, never, R> =>
  Effect.gen(function*() {
    const chunks = yield* Queue.unbounded<Uint8Array | "end" | "cut">()
    const head = yield* Deferred.make<void>()
    const req = memoryRequest(request)
    const res = new MemoryResponse(
      () => Deferred.doneUnsafe(head, Effect.void),
      (chunk) => Queue.offerUnsafe(chunks, chunk)
    )
    const ctx = requestContextOf(req, res as unknown as ServerResponse, request.method.toUpperCase(), request.path)
    const program = routeProgram(router, ctx, log, tracing)
    // Run in the telemetry's request context: a request it does not trace runs with tracing off.
    const fiber = yield* Effect.forkDetach(tracing?.tracing === true && ctx.traced !== true ? Effect.withTracerEnabled(program, false) : program)
    yield* Deferred.await(head)
    const body: Stream.Stream<Uint8Array, LocalResponseCut> = Stream.fromEffectRepeat(Queue.take(chunks)).pipe(
      Stream.takeWhile((chunk) => chunk !== "end"),
      Stream.mapEffect((chunk) => {
        if (chunk === "cut") return Effect.fail(new LocalResponseCut("the response was cut after its head"))
        res.taken()
        return Effect.succeed(chunk as Uint8Array)
      }),
      Stream.onExit((exit) => (exit._tag === "Failure" ? Fiber.interrupt(fiber) : Effect.void))
    )
    return { status: res.statusCode, headers: res.headers, body }
  })

/** A local answer read whole: status, headers and body, or the cut. */
export const readLocal = (response: LocalResponse): Effect.Effect<{ readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: Uint8Array }, LocalResponseCut> =>
  Effect.map(Stream.runCollect(response.body), (chunks) => ({
    status: response.status,
    headers: response.headers,
    body: Buffer.concat([...chunks])
  }))
