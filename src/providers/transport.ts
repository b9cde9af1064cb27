/**
 * The upstream transport: one undici `Agent` (a keep-alive pool per origin,
 * shared by every request and tenant) driven through its low-level dispatch
 * API, so a proxied body is never copied into intermediate streams.
 *
 * An `Exchange` is one upstream request. `send` resolves at the response head:
 * a non-2xx status becomes an `UpstreamError` (its body read, bounded, for
 * classification); a 2xx gives an `UpstreamBody` that is consumed exactly
 * once, by `pipe` (fast path: chunks straight to a sink with backpressure),
 * `pull` (an Effect `Stream` for the normalized path) or `readAll`.
 *
 * Details
 * - `idleTimeoutMs` bounds the wait for the response head and, after it, every
 *   gap between two chunks (one timer, re-armed per chunk); a timeout aborts
 *   the request and fails with a timed-out `UpstreamError`.
 * - Interrupting `send` aborts the request.
 * - Interrupting a body consumer (the caller went away) aborts the upstream
 *   request at once, so no socket or fiber outlives the caller.
 */
import { Cause, Context, Effect, Layer, Stream } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import type { Readable } from "node:stream"
import { Agent } from "undici"
import type { Dispatcher } from "undici"
import { UpstreamError } from "../domain/index.ts"
import type { ProviderFamily } from "../domain/index.ts"

export interface UpstreamCall {
  /** Provider id and family, for errors and `x-gw-upstream-provider`. */
  readonly providerId: string
  readonly family: ProviderFamily
  /** `http://host:port` */
  readonly origin: string
  readonly method: string
  /** Path and query. */
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string | Uint8Array | Readable | undefined
  /** Longest wait for the response head, and for each chunk after it. */
  readonly idleTimeoutMs: number
}

export interface ChunkSink {
  /** Returns false when the sink wants the producer to wait for `onDrain`. */
  write(chunk: Uint8Array): boolean
  onDrain(resume: () => void): void
}

export interface UpstreamBody {
  /** Forwards every chunk to `sink`; `tap` sees each chunk after it was written. */
  readonly pipe: (sink: ChunkSink, tap?: (chunk: Uint8Array) => void) => Effect.Effect<void, UpstreamError>
  /** The chunks as a stream (the normalized path). */
  readonly stream: Stream.Stream<Uint8Array, UpstreamError>
  /** The whole body, failing beyond `limit` bytes. */
  readonly readAll: (limit: number) => Effect.Effect<Uint8Array, UpstreamError>
  readonly abort: () => void
}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: UpstreamBody
}

const ERROR_BODY_LIMIT = 64 * 1024
const BUFFER_HIGH_WATER = 8
const UNREACHED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"])

const headerValue = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** Seconds from an upstream `Retry-After` (integer seconds or an HTTP date). */
export const parseRetryAfter = (headers: IncomingHttpHeaders): number | undefined => {
  const value = headerValue(headers, "retry-after")
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}

class AbortedByGateway extends Error {}

type Resume<A> = (effect: Effect.Effect<A, UpstreamError>) => void

/** One upstream request: an undici dispatch handler and the body it produces. */
class Exchange implements Dispatcher.DispatchHandler, UpstreamBody {
  private controller: Dispatcher.DispatchController | undefined
  private aborted = false
  private headResume: Resume<UpstreamResponse> | undefined
  private status = 0
  private headers: IncomingHttpHeaders = {}
  private errorChunks: Array<Buffer> | undefined
  private errorSize = 0
  private buffered: Array<Uint8Array> = []
  private ended = false
  private failure: UpstreamError | undefined
  private sink: ChunkSink | undefined
  private tap: ((chunk: Uint8Array) => void) | undefined
  private waiter: (() => void) | undefined
  private idleTimer: NodeJS.Timeout | undefined
  private readonly call: UpstreamCall

  constructor(call: UpstreamCall, resume: Resume<UpstreamResponse>) {
    this.call = call
    this.headResume = resume
    this.armIdleTimer()
  }

  // --- undici handler -------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.aborted) controller.abort(new AbortedByGateway("aborted"))
  }

  /** Each request-body chunk sent proves the connection is alive: a slow upload is not a timeout. */
  onBodySent(): void {
    this.idleTimer?.refresh()
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.status = status
    this.headers = headers
    if (status >= 400) {
      this.errorChunks = []
      return
    }
    const resume = this.headResume
    this.headResume = undefined
    this.idleTimer?.refresh()
    resume?.(Effect.succeed({ status, headers, body: this }))
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.errorChunks !== undefined) {
      if (this.errorSize < ERROR_BODY_LIMIT) this.errorChunks.push(chunk)
      this.errorSize += chunk.byteLength
      return
    }
    this.idleTimer?.refresh()
    const sink = this.sink
    if (sink !== undefined) {
      if (!sink.write(chunk)) {
        this.pauseForCaller(controller)
        sink.onDrain(() => this.resumeForCaller())
      }
      this.tap?.(chunk)
      return
    }
    this.buffered.push(chunk)
    if (this.buffered.length >= BUFFER_HIGH_WATER) this.pauseForCaller(controller)
    this.wake()
  }

  onResponseEnd(): void {
    this.clearIdleTimer()
    if (this.errorChunks !== undefined) {
      const body = Buffer.concat(this.errorChunks).subarray(0, ERROR_BODY_LIMIT)
      this.errorChunks = undefined
      const resume = this.headResume
      this.headResume = undefined
      resume?.(Effect.fail(this.httpError(body)))
      return
    }
    this.ended = true
    this.wake()
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.clearIdleTimer()
    if (error instanceof AbortedByGateway && this.failure === undefined) return
    const failure = this.failure ?? this.networkError(error)
    this.failure = failure
    const resume = this.headResume
    this.headResume = undefined
    resume?.(Effect.fail(failure))
    this.wake()
  }

  // --- errors ---------------------------------------------------------------

  private httpError(body: Buffer): UpstreamError {
    return UpstreamError.fromResponse(this.call, this.status, body, {
      retryAfter: parseRetryAfter(this.headers),
      contentType: headerValue(this.headers, "content-type")
    })
  }

  private networkError(error: Error): UpstreamError {
    const code = (error as { code?: string }).code ?? ""
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? ""
    return UpstreamError.fault(this.call, code || cause || error.message, {
      reached: this.status !== 0 || !(UNREACHED.has(code) || UNREACHED.has(cause))
    })
  }

  private armIdleTimer(): void {
    this.idleTimer = setTimeout(() => {
      const waitingForHead = this.headResume !== undefined
      this.failure = UpstreamError.fault(
        this.call,
        waitingForHead ? `no response within ${this.call.idleTimeoutMs} ms` : `no data for ${this.call.idleTimeoutMs} ms`,
        { timedOut: true }
      )
      this.aborted = true
      this.controller?.abort(new AbortedByGateway("timeout"))
      const resume = this.headResume
      this.headResume = undefined
      resume?.(Effect.fail(this.failure))
      this.wake()
    }, this.call.idleTimeoutMs)
  }

  /**
   * The gateway itself holds the upstream back (the caller reads slower than
   * the upstream writes): that silence is not the upstream's, so its idle
   * timer stops until the caller catches up.
   */
  private pauseForCaller(controller: Dispatcher.DispatchController): void {
    if (controller.paused) return
    controller.pause()
    this.clearIdleTimer()
  }

  private resumeForCaller(): void {
    const controller = this.controller
    if (controller === undefined || !controller.paused || this.ended || this.failure !== undefined) return
    this.armIdleTimer()
    controller.resume()
  }

  private clearIdleTimer(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer)
    this.idleTimer = undefined
  }

  private wake(): void {
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.()
  }

  // --- body -----------------------------------------------------------------

  readonly abort = (): void => {
    this.clearIdleTimer()
    if (this.aborted) return
    this.aborted = true
    if (this.controller !== undefined && !this.ended) this.controller.abort(new AbortedByGateway("aborted"))
  }

  pipe(sink: ChunkSink, tap?: (chunk: Uint8Array) => void): Effect.Effect<void, UpstreamError> {
    return Effect.callback<void, UpstreamError>((resume) => {
      for (const chunk of this.buffered) {
        sink.write(chunk)
        tap?.(chunk)
      }
      this.buffered = []
      this.sink = sink
      this.tap = tap
      const settle = () => {
        if (this.failure !== undefined) resume(Effect.fail(this.failure))
        else if (this.ended) resume(Effect.void)
        else this.waiter = settle
      }
      this.resumeForCaller()
      settle()
      return Effect.sync(this.abort)
    })
  }

  private pullChunks(): Effect.Effect<readonly [Uint8Array, ...Array<Uint8Array>], UpstreamError | Cause.Done> {
    return Effect.callback((resume) => {
      const settle = () => {
        if (this.buffered.length > 0) {
          const chunks = this.buffered as unknown as readonly [Uint8Array, ...Array<Uint8Array>]
          this.buffered = []
          this.resumeForCaller()
          resume(Effect.succeed(chunks))
        } else if (this.failure !== undefined) {
          resume(Effect.fail(this.failure))
        } else if (this.ended) {
          resume(Cause.done())
        } else {
          this.waiter = settle
        }
      }
      settle()
    })
  }

  get stream(): Stream.Stream<Uint8Array, UpstreamError> {
    return Stream.fromPull(Effect.succeed(this.pullChunks())).pipe(Stream.onExit(() => Effect.sync(this.abort)))
  }

  readAll(limit: number): Effect.Effect<Uint8Array, UpstreamError> {
    return Effect.flatMap(
      Stream.runFold(this.stream, () => ({ chunks: [] as Array<Uint8Array>, size: 0 }), (acc, chunk) => {
        acc.size += chunk.byteLength
        if (acc.size <= limit) acc.chunks.push(chunk)
        return acc
      }),
      (acc) =>
        acc.size > limit
          ? Effect.fail(UpstreamError.fault(this.call, `response body exceeds ${limit} bytes`, { status: this.status }))
          : Effect.succeed(acc.chunks.length === 1 ? acc.chunks[0] : Buffer.concat(acc.chunks))
    )
  }
}

/** Sends upstream requests. The live layer uses undici; tests script it. */
export class ProviderClient extends Context.Service<ProviderClient, {
  readonly send: (call: UpstreamCall) => Effect.Effect<UpstreamResponse, UpstreamError>
}>()("gateway/providers/ProviderClient") {
  static readonly layer: Layer.Layer<ProviderClient> = Layer.effect(
    ProviderClient,
    Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          // No cap per origin: long-lived streams would otherwise queue behind each other
          // (1000 concurrent chats to one provider need 1000 sockets); idle ones are reused.
          connections: null,
          pipelining: 1,
          keepAliveTimeout: 30_000,
          keepAliveMaxTimeout: 600_000,
          // Our own timeouts bound the head and every gap between chunks.
          headersTimeout: 0,
          bodyTimeout: 0
        })
      ),
      (agent) => Effect.promise(() => agent.close())
    ).pipe(
      Effect.map((agent) =>
        ProviderClient.of({
          send: (call) =>
            Effect.callback<UpstreamResponse, UpstreamError>((resume) => {
              const exchange = new Exchange(call, resume)
              agent.dispatch(
                {
                  origin: call.origin,
                  path: call.path,
                  method: call.method as Dispatcher.HttpMethod,
                  headers: call.headers,
                  body: call.body ?? null
                },
                exchange
              )
              return Effect.sync(exchange.abort)
            })
        })
      )
    )
  )
}
