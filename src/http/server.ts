/**
 * The HTTP edge on `node:http`: one listener that matches the route, builds
 * the request context and runs the handler as an Effect program with the
 * gateway's services. The pipeline behind it is all Effect; only the edge is
 * plain Node, because Effect's `HttpServer` doubled the CPU cost of a proxied
 * request (measured: ~230 µs vs ~105 µs per request on this machine class).
 *
 * Details
 * - Every response carries `x-request-id` (echoed when the caller sent a sane one).
 * - A caller that disconnects interrupts the handler's fiber at once; the
 *   provider transport aborts the upstream request from its finalizer.
 * - One JSON log line per request, written when the response closes.
 * - Shutdown stops accepting, lets in-flight requests finish for the grace
 *   period, then closes what is left.
 */
import { Context, Effect, References, Schema, Tracer } from "effect"
import type * as Http from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { bodyReply, endServerSpan, JSON_CONTENT_TYPE, startServerSpan } from "../pipeline/index.ts"
import type { JsonLog, RecordRequest, RequestLogFields } from "../pipeline/index.ts"
import type { EdgeContext } from "./context.ts"
import { errorBody, requestContextOf, routeProgram } from "./dispatch.ts"
import { writeWhole } from "./write-reply.ts"
import type { EdgeTracing } from "./dispatch.ts"
import { watchBody } from "./body-watch.ts"
import { hasBody } from "./limited-body.ts"
import type { Router } from "./router.ts"

/**
 * `node:http` by `require`: an ES import of it makes Node build the module's
 * ESM facade, which reads every export, including the lazy `WebSocket` getter
 * that loads Node's own copy of undici with TLS, HTTP/2 and worker threads:
 * ~12 MiB of resident memory a gateway never uses.
 */
const { createServer } = createRequire(import.meta.url)("node:http") as typeof Http

const ignore = (): void => {}

/** The request's log fields plus the edge's own, written once when the response closes. */
type RequestLine = RequestLogFields & {
  request_id?: string
  method?: string
  path?: string
  status?: number
  duration_ms?: number
  aborted?: boolean
}

/** A request being served: its context and how to stop its program. */
interface ActiveRequest {
  readonly ctx: EdgeContext
  interrupt: (() => void) | undefined
  /** Its links in `ActiveList`; only the list touches them. */
  prev: ActiveRequest | undefined
  next: ActiveRequest | undefined
  listed: boolean
}

/**
 * The requests in flight, a list linked through the requests themselves. Not
 * a `Set`: a set's hash table, replaced as it grows and shrinks, lingers in
 * the old generation as garbage still pointing at young requests, and each
 * scavenge then keeps (and promotes) those requests with everything their
 * context holds. Measured with `--trace-gc-nvp` at full load: 2.7 KB promoted
 * per JSON request with a `Set`, 0.1 KB with this list (and 2 mark-compacts
 * per 6,000 requests against none). A removed request keeps no link.
 */
class ActiveList implements Iterable<ActiveRequest> {
  private first: ActiveRequest | undefined = undefined
  size = 0

  add(request: ActiveRequest): void {
    request.listed = true
    request.next = this.first
    if (this.first !== undefined) this.first.prev = request
    this.first = request
    this.size++
  }

  delete(request: ActiveRequest): void {
    if (!request.listed) return
    request.listed = false
    const { prev, next } = request
    if (prev === undefined) this.first = next
    else prev.next = next
    if (next !== undefined) next.prev = prev
    request.prev = undefined
    request.next = undefined
    this.size--
  }

  /** A copy: a request may finish (and leave the list) while the caller walks it. */
  [Symbol.iterator](): Iterator<ActiveRequest> {
    const all: Array<ActiveRequest> = []
    for (let request = this.first; request !== undefined; request = request.next) all.push(request)
    return all[Symbol.iterator]()
  }
}

/** What the edge knows across requests: what is in flight, and whether it is shutting down. */
export interface InFlight {
  /** The requests being served. */
  readonly active: ActiveList
  /** Resolvers waiting for `active` to empty (shutdown). */
  readonly idle: Array<() => void>
  /** Set when shutdown began: new requests are answered 503 and their connection closed. */
  draining: boolean
  /** Requests a callback waits for (`whenSettled`): what was in flight when it was made. */
  readonly settling: Array<{ readonly pending: Set<ActiveRequest>; readonly done: () => void }>
}

export const makeInFlight = (): InFlight => ({ active: new ActiveList(), idle: [], draining: false, settling: [] })

/** Calls `done` once every request in flight now has finished (at once when none is). */
export const whenSettled = (inFlight: InFlight, done: () => void): void => {
  if (inFlight.active.size === 0) return done()
  inFlight.settling.push({ pending: new Set(inFlight.active), done })
}

const settle = (inFlight: InFlight, active: ActiveRequest): void => {
  for (let i = inFlight.settling.length - 1; i >= 0; i--) {
    const { pending, done } = inFlight.settling[i]
    if (!pending.delete(active) || pending.size > 0) continue
    inFlight.settling.splice(i, 1)
    done()
  }
}

/** Event streams being written to callers now: requests in flight whose stream committed and has not ended. */
export const openStreams = (inFlight: InFlight): number => {
  let open = 0
  for (const { ctx } of inFlight.active) if (ctx.streaming === true && !ctx.res.writableEnded) open++
  return open
}

export interface EdgeOptions {
  /** A request body that makes no progress this long is answered 408 and its connection closed. */
  readonly bodyIdleMs: number
  /** So is a request body slower than this on average, after a head start of `bodyIdleMs` (0: no rate rule). */
  readonly bodyMinBytesPerSec: number
  /** The server span of each request (the `Telemetry` service); untraced without it. */
  readonly tracing?: EdgeTracing | undefined
  /** Records each finished request in the metrics (`[metrics]`); nothing when they are off. */
  readonly metrics?: RecordRequest | undefined
}

export const makeRequestListener = <R>(
  router: Router<R>,
  context: Context.Context<R>,
  log: JsonLog,
  inFlight: InFlight = makeInFlight(),
  options: EdgeOptions = { bodyIdleMs: 30_000, bodyMinBytesPerSec: 1024 }
): Http.RequestListener => {
  const bodyWatch = { idleMs: options.bodyIdleMs, minBytesPerSec: options.bodyMinBytesPerSec }
  const record = options.metrics
  const tracer = Context.get(context, Tracer.Tracer)
  // A request the telemetry does not sample runs with tracing off from its first step.
  const runUntraced = Effect.runCallbackWith(Context.add(context, References.TracerEnabled, false))
  const finished = (active: ActiveRequest) => {
    inFlight.active.delete(active)
    if (inFlight.settling.length > 0) settle(inFlight, active)
    if (inFlight.active.size === 0) for (const resolve of inFlight.idle.splice(0)) resolve()
  }
  return (req, res) => {
    const ctx = requestContextOf(req, res, req.method ?? "GET", req.url ?? "/")
    // A socket error on one request (reset, write after close) must never become an
    // uncaught exception that takes every other in-flight request down with it.
    req.on("error", ignore)
    res.on("error", ignore)
    if (inFlight.draining) {
      writeWhole(
        ctx,
        bodyReply(ctx, 503, errorBody(ctx, 503, "shutting_down", "the gateway is shutting down; retry on another instance"), JSON_CONTENT_TYPE, {
          connection: "close",
          "retry-after": "1"
        })
      )
      return
    }
    const active: ActiveRequest = { ctx, interrupt: undefined, prev: undefined, next: undefined, listed: false }
    inFlight.active.add(active)
    res.once("close", () => {
      const aborted = !res.writableFinished
      if (aborted && active.interrupt !== undefined) active.interrupt()
      finished(active)
      const durationMs = performance.now() - ctx.startedAt
      // A caller gone before any answer was written is counted as nginx does: 499.
      if (record !== undefined) record(ctx.endpoint ?? "unmatched", ctx.caller, aborted && !res.headersSent ? 499 : res.statusCode, durationMs, ctx.log)
      if (log.enabled("info")) {
        const line: RequestLine = ctx.log
        line.request_id = ctx.requestId
        line.method = ctx.method
        line.path = ctx.path
        line.status = res.statusCode
        line.duration_ms = Math.round(durationMs * 1000) / 1000
        if (aborted) line.aborted = true
        log.log("info", "request", line)
      }
    })
    if (hasBody(req.headers)) {
      watchBody(req, bodyWatch, (stall) => {
        ctx.log.error_code = "body_timeout"
        const midResponse = res.headersSent
        const message = stall === "idle"
          ? `the request body made no progress for ${options.bodyIdleMs / 1000} s`
          : `the request body arrived slower than ${options.bodyMinBytesPerSec} bytes/s`
        // The 408 closes the connection (the body is still pending); a response already under way is cut.
        writeWhole(ctx, bodyReply(ctx, 408, errorBody(ctx, 408, "request_timeout", message), JSON_CONTENT_TYPE))
        active.interrupt?.()
        if (midResponse) res.destroy()
      })
    }

    const program = routeProgram(router, ctx, log, options.tracing)
    let exited = false
    // A traced request's fiber starts in its server span (its parent span) and ends it with its exit.
    const span = ctx.traced === true
      ? startServerSpan(tracer, { method: ctx.method, route: ctx.endpoint!, path: ctx.path, requestId: ctx.requestId, parent: ctx.traceParent })
      : undefined
    const run = span === undefined ? runUntraced : Effect.runCallbackWith(Context.add(context, Tracer.ParentSpan, span))
    const interrupt = run(program, {
      onExit: (exit) => {
        exited = true
        active.interrupt = undefined
        if (span !== undefined) endServerSpan(span, res.statusCode, exit)
      }
    })
    if (!exited) active.interrupt = interrupt
  }
}

/**
 * Ends a request still running when the shutdown grace period is over: a
 * stream gets its error frame (the caller sees a failure, never a reset that
 * looks like a cut answer), anything else a 503; then its program stops.
 */
const endAtShutdown = ({ ctx, interrupt }: ActiveRequest): void => {
  const { res } = ctx
  if (!res.headersSent) {
    writeWhole(ctx, bodyReply(ctx, 503, errorBody(ctx, 503, "shutting_down", "the gateway shut down before the answer was complete"), JSON_CONTENT_TYPE, { connection: "close" }))
  } else if (ctx.stopStream !== undefined && !res.writableEnded) {
    // The stream's own stage writes the frame through the reply's writer, then the program ends by itself.
    ctx.log.error_code ??= "shutdown"
    ctx.stopStream()
    return
  }
  ctx.log.error_code ??= "shutdown"
  interrupt?.()
}

/** The gateway cannot start serving (the port is taken, a required feature is missing). */
export class StartError extends Schema.TaggedError<StartError>()("StartError", { message: Schema.String }) {}

export interface ServeOptions {
  readonly host: string
  readonly port: number
  /** How long in-flight requests may run after shutdown begins. */
  readonly graceMs: number
  /** Open connections at most; one more is answered 503 and closed. */
  readonly maxConnections: number
  /** Longest wait for a request's headers. */
  readonly headerTimeoutMs: number
  /** A connection with no traffic either way this long is closed. */
  readonly clientIdleMs: number
}

const OVER_CAPACITY_BODY = JSON.stringify({ error: { message: "the gateway has too many open connections; retry shortly", type: "api_error", param: null, code: "too_many_connections" } })
/** A raw 503 for a connection over the limit: written before any request is read, then the socket ends. */
const OVER_CAPACITY =
  `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(OVER_CAPACITY_BODY)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n${OVER_CAPACITY_BODY}`

/**
 * Listens until the enclosing scope closes, then shuts down gracefully.
 * Resolves with the bound address (port 0 picks a free one, for tests).
 */
export const listen = (
  options: ServeOptions,
  listener: Http.RequestListener,
  inFlight: InFlight,
  log: JsonLog
) =>
  Effect.acquireRelease(
    Effect.callback<Http.Server, StartError>((resume) => {
      // requestTimeout 0: a large upload may take long; a stalled body is the edge's 408 instead.
      const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: options.headerTimeoutMs }, listener)
      // A caller whose socket makes no progress (a stalled reader holding an upstream stream
      // paused) is disconnected; its upstream request is aborted with it.
      server.setTimeout(options.clientIdleMs)
      let connections = 0
      server.on("connection", (socket) => {
        connections++
        socket.once("close", () => connections--)
        if (connections > options.maxConnections) {
          socket.on("error", ignore)
          socket.end(OVER_CAPACITY)
        }
      })
      server.once("error", (error: NodeJS.ErrnoException) => {
        const reason = error.code === "EADDRINUSE"
          ? "the address is already in use (free it, or set [server] port)"
          : error.code === "EACCES"
          ? "permission denied (ports below 1024 need privileges)"
          : error.code === "EADDRNOTAVAIL"
          ? "the address is not available on this machine (check [server] host)"
          : error.message
        resume(Effect.fail(new StartError({ message: `cannot listen on ${options.host}:${options.port}: ${reason}` })))
      })
      server.listen(options.port, options.host, () => {
        const address = server.address() as AddressInfo
        log.log("info", "listening", { host: address.address, port: address.port })
        resume(Effect.succeed(server))
      })
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        log.log("info", "shutting down", { in_flight: inFlight.active.size })
        inFlight.draining = true
        server.close(() => resume(Effect.void))
        server.closeIdleConnections()
        const force = setTimeout(() => {
          for (const active of inFlight.active) endAtShutdown(active)
          // Give the frames written above a moment to leave before the sockets go.
          setTimeout(() => server.closeAllConnections(), 50).unref()
        }, options.graceMs)
        force.unref()
        const onIdle = () => {
          clearTimeout(force)
          server.closeAllConnections()
        }
        if (inFlight.active.size === 0) onIdle()
        else inFlight.idle.push(onIdle)
      })
  )

export const boundPort = (server: Http.Server): number => (server.address() as AddressInfo).port
