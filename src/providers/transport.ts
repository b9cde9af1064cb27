/**
 * The upstream transport: one undici `Agent` (a keep-alive pool per origin,
 * shared by every request and tenant) driven through its low-level dispatch
 * API, so a proxied body is never copied into intermediate streams.
 *
 * An `Exchange` is one upstream request. `send` resolves at the response head:
 * a status of 300 or more becomes an `UpstreamError` (its body read, bounded,
 * for classification); a 2xx gives an `UpstreamBody` that is consumed exactly
 * once, by `attach` (chunks pushed straight to a sink with backpressure, the
 * stream stages' source) or `readAll`.
 *
 * Details
 * - Ownership: an exchange is a resource of the `Scope` of the attempt that
 *   opened it (its release is registered in that scope before the request goes
 *   out): when that scope closes, however the attempt ended (done, failed,
 *   retried, interrupted, the caller gone), the exchange is aborted unless it
 *   already finished. Nothing else needs to remember to abort it.
 * - `idleTimeoutMs` bounds the wait for the response head and, after it, every
 *   gap between two chunks; request-body bytes sent count as life (a slow
 *   upload is not a timeout). The wait is timed on Effect's `Clock` by the
 *   client's one watch fiber (./deadline.ts), so `TestClock` drives it;
 *   undici's own timers are off, as `@effect/platform-node`'s client leaves
 *   timeouts to Effect. A timeout aborts the request and fails with a
 *   timed-out `UpstreamError`.
 * - Interim 1xx responses are skipped; a 3xx is never followed (it would send
 *   the prompt to another host) and fails as `upstream`.
 * - `decode: true` decodes a `content-encoding` the upstream applied unasked
 *   (gzip, deflate, br) for the consumers that read the body; the consumer
 *   sees the headers without `content-encoding`. Without it the bytes stay as
 *   they came, to be forwarded with their header. Error bodies are always
 *   decoded: they are read for classification and the caller's envelope.
 * - `errorBodies: "stream"` (native passthrough) hands a 4xx/5xx over like a
 *   success, so its whole body can be forwarded byte for byte.
 */
import { Context, Effect, Layer, Redacted, Scope } from "effect"
import type { Clock } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import type { Readable } from "node:stream"
import { Agent } from "./undici.ts"
import type { Dispatcher } from "undici"
import { UpstreamError } from "../domain/index.ts"
import type { ProviderFamily } from "../domain/index.ts"
import { decodeWhole, decompressorFor } from "./content-encoding.ts"
import { timedOut, Watch } from "./deadline.ts"
import type { Watched } from "./deadline.ts"
import type { Decompressor } from "./content-encoding.ts"
import { parseRetryAfterMs } from "./retry-after.ts"
import type { SignRequest } from "./sigv4.ts"

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
  /** Decode a compressed success body for the consumer (see the module notes). */
  readonly decode?: boolean | undefined
  /** `stream`: a 4xx/5xx is a response like a success, its body unread (native passthrough). */
  readonly errorBodies?: "classify" | "stream" | undefined
  /** The key this request carries: masked wherever an upstream error body echoes it. */
  readonly secret?: Redacted.Redacted<string> | undefined
  /** Signs the request over its exact body (SigV4): the headers it adds, computed just before it goes out. */
  readonly sign?: SignRequest | undefined
}

export interface ChunkSink {
  /** Returns false when the sink wants the producer to wait for `onDrain`. */
  write(chunk: Uint8Array): boolean
  onDrain(resume: () => void): void
}

/** Where a body is pushed: its chunks with backpressure, then exactly one of `end` or `fail`. */
export interface ByteSink<E> extends ChunkSink {
  end(): void
  fail(error: E): void
}

export interface UpstreamBody {
  /**
   * Pushes every chunk to `sink` as it arrives (those that came before first),
   * pausing the upstream while the sink asks to wait, then ends or fails it.
   * No Effect runs per chunk: the chunk goes from undici's callback to the
   * sink in the same call.
   */
  readonly attach: (sink: ByteSink<UpstreamError>) => void
  /** The whole body; past `limit` bytes the download is aborted and the read fails. */
  readonly readAll: (limit: number) => Effect.Effect<Uint8Array, UpstreamError>
  readonly abort: () => void
}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: UpstreamBody
}

/** An error body is read this far for classification and the caller's envelope. */
export const ERROR_BODY_LIMIT = 64 * 1024
const BUFFER_HIGH_WATER = 8
const UNREACHED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"])

const headerValue = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** The head as the consumer of a decoded body sees it. */
const withoutEncoding = (headers: IncomingHttpHeaders): IncomingHttpHeaders => {
  const copy = { ...headers }
  delete copy["content-encoding"]
  delete copy["content-length"]
  return copy
}

const MASK = Buffer.from("[redacted]")

/**
 * The body with every occurrence of the key replaced (an upstream's "incorrect
 * API key sk-…" must not hand a configured key to the caller): the one change
 * the gateway makes to an error body it otherwise relays verbatim.
 */
export const maskSecret = (body: Uint8Array, secret: Redacted.Redacted<string> | undefined): Uint8Array => {
  if (secret === undefined) return body
  const value = Redacted.value(secret)
  // A short value would match ordinary text; keys are long.
  if (value.length < 8) return body
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  const needle = Buffer.from(value)
  let at = bytes.indexOf(needle)
  if (at === -1) return body
  const parts: Array<Uint8Array> = []
  let from = 0
  while (at !== -1) {
    parts.push(bytes.subarray(from, at), MASK)
    from = at + needle.length
    at = bytes.indexOf(needle, from)
  }
  parts.push(bytes.subarray(from))
  return Buffer.concat(parts)
}

class AbortedByGateway extends Error {}

type Resume<A> = (effect: Effect.Effect<A, UpstreamError>) => void

/** One upstream request: an undici dispatch handler, the body it produces, and what the client's watch times. */
class Exchange implements Dispatcher.DispatchHandler, UpstreamBody, Watched {
  private controller: Dispatcher.DispatchController | undefined
  private aborted = false
  private headResume: Resume<UpstreamResponse> | undefined
  lastActivityAt: number
  holding = false
  settled = false
  watchPrev: Watched | undefined = undefined
  watchNext: Watched | undefined = undefined
  watched = false
  private status = 0
  private headers: IncomingHttpHeaders = {}
  private errorChunks: Array<Buffer> | undefined
  private errorSize = 0
  private decompressor: Decompressor | undefined
  private buffered: Array<Uint8Array> = []
  private ended = false
  private failure: UpstreamError | undefined
  private sink: ByteSink<UpstreamError> | undefined
  private waiter: (() => void) | undefined
  private readonly call: UpstreamCall
  readonly idleTimeoutMs: number
  private readonly watch: Watch
  private readonly clock: Clock.Clock

  constructor(call: UpstreamCall, watch: Watch) {
    this.call = call
    this.idleTimeoutMs = call.idleTimeoutMs
    this.watch = watch
    this.clock = watch.clock
    this.lastActivityAt = watch.clock.currentTimeMillisUnsafe()
  }

  /**
   * Sends the request, timed by the watch, and waits for its head; interrupting
   * the wait aborts the request.
   */
  start(agent: Agent): Effect.Effect<UpstreamResponse, UpstreamError> {
    return Effect.callback<UpstreamResponse, UpstreamError>((resume) => {
      this.headResume = resume
      this.watch.add(this)
      const { call } = this
      agent.dispatch(
        { origin: call.origin, path: call.path, method: call.method as Dispatcher.HttpMethod, headers: call.headers, body: call.body ?? null },
        this
      )
      return Effect.sync(this.abort)
    })
  }

  private settleHead(outcome: Effect.Effect<UpstreamResponse, UpstreamError>): void {
    // Settled once: the head's resume is dropped as it is called.
    const resume = this.headResume
    if (resume === undefined) return
    this.headResume = undefined
    resume(outcome)
  }

  private touch(): void {
    this.lastActivityAt = this.clock.currentTimeMillisUnsafe()
  }

  // --- undici handler -------------------------------------------------------

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.aborted) controller.abort(new AbortedByGateway("aborted"))
  }

  /** Each request-body chunk sent proves the connection is alive: a slow upload is not a timeout. */
  onBodySent(): void {
    this.touch()
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    // undici keeps the head's raw header buffers on the controller for the life of the
    // exchange (~2.5 KiB per open stream); nothing reads them after the parsed `headers`.
    controller.rawHeaders = null
    // An interim 1xx (100 Continue, 102 Processing, 103 Early Hints) is not the answer.
    if (status < 200) return
    this.status = status
    this.headers = headers
    this.touch()
    if (status >= 300 && !(status >= 400 && this.call.errorBodies === "stream")) {
      this.errorChunks = []
      return
    }
    let head = headers
    if (this.call.decode === true) {
      this.decompressor = decompressorFor(headers["content-encoding"])
      if (this.decompressor !== undefined) {
        head = withoutEncoding(headers)
        this.decompressor.on("data", (chunk: Buffer) => this.deliver(chunk))
        this.decompressor.on("end", () => this.finish())
        this.decompressor.on("error", () => this.fail(UpstreamError.fault(this.call, "upstream sent a body that does not decode", { status })))
      }
    }
    this.settleHead(Effect.succeed({ status, headers: head, body: this }))
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.errorChunks !== undefined) {
      if (this.errorSize < ERROR_BODY_LIMIT) this.errorChunks.push(chunk)
      this.errorSize += chunk.byteLength
      return
    }
    // The chunks of one turn arrive together: the first one's time is every one's.
    if (this.turn === undefined) this.touch()
    if (this.decompressor !== undefined) this.decompressor.write(chunk)
    else this.deliver(chunk)
  }

  onResponseEnd(): void {
    this.settled = true
    if (this.errorChunks !== undefined) {
      const raw = Buffer.concat(this.errorChunks).subarray(0, ERROR_BODY_LIMIT)
      this.errorChunks = undefined
      this.settleHead(Effect.fail(this.httpError(raw)))
      return
    }
    if (this.decompressor !== undefined) this.decompressor.end()
    else this.finish()
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.settled = true
    if (error instanceof AbortedByGateway && this.failure === undefined) return
    this.fail(this.failure ?? this.networkError(error))
  }

  // --- delivery ---------------------------------------------------------------

  /**
   * The chunks of this turn not yet handed to the sink: undici gives a chunked
   * body chunk by chunk (an upstream read of twenty events is twenty calls),
   * and the sink takes them as one at the turn's end (a microtask), or before
   * the body's end or failure is told.
   */
  private turn: Array<Uint8Array> | undefined

  private deliver(chunk: Uint8Array): void {
    if (this.aborted) return
    if (this.sink !== undefined) {
      if (this.turn === undefined) {
        this.turn = [chunk]
        queueMicrotask(() => this.handOver())
      } else {
        this.turn.push(chunk)
      }
      return
    }
    this.buffered.push(chunk)
    if (this.buffered.length >= BUFFER_HIGH_WATER) this.pauseForCaller()
    this.wake()
  }

  private finish(): void {
    this.ended = true
    this.wake()
  }

  private fail(failure: UpstreamError): void {
    this.failure ??= failure
    this.settleHead(Effect.fail(this.failure))
    this.wake()
  }

  /** This turn's chunks, to the sink as one. */
  private handOver(): void {
    const chunks = this.turn
    if (chunks === undefined) return
    this.turn = undefined
    const sink = this.sink
    if (this.aborted || sink === undefined) return
    if (!sink.write(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))) {
      this.pauseForCaller()
      sink.onDrain(this.resumeForCaller)
    }
  }

  /** Tells the attached sink (once) that the body ended or failed; or a waiting reader. */
  private wake(): void {
    this.handOver()
    const sink = this.sink
    if (sink !== undefined) {
      if (this.failure !== undefined) {
        this.sink = undefined
        sink.fail(this.failure)
      } else if (this.ended) {
        this.sink = undefined
        sink.end()
      }
      return
    }
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.()
  }

  // --- errors ---------------------------------------------------------------

  private httpError(raw: Buffer): UpstreamError {
    const body = maskSecret(decodeWhole(this.headers["content-encoding"], raw, ERROR_BODY_LIMIT) ?? Buffer.alloc(0), this.call.secret)
    return UpstreamError.fromResponse(this.call, this.status, body, {
      retryAfterMs: parseRetryAfterMs(this.headers),
      contentType: headerValue(this.headers, "content-type"),
      // AWS names the error in a header (`ThrottlingException:http://…`), its body is only `{"message"}`.
      errorType: headerValue(this.headers, "x-amzn-errortype")?.split(":")[0]
    })
  }

  private networkError(error: Error): UpstreamError {
    const code = (error as { code?: string }).code ?? ""
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? ""
    return UpstreamError.fault(this.call, code || cause || error.message, {
      reached: this.status !== 0 || !(UNREACHED.has(code) || UNREACHED.has(cause)),
      // The code, never the message, is what gets logged: a message may quote anything.
      networkCode: code || cause || error.name
    })
  }

  /** The upstream stayed silent too long (the watch's verdict). */
  expire(): void {
    if (this.settled) return
    const failure = timedOut(this.call, this.headResume === undefined ? "idle" : "head")
    this.failure = failure
    this.aborted = true
    this.settled = true
    this.controller?.abort(new AbortedByGateway("timeout"))
    this.decompressor?.destroy()
    this.fail(failure)
  }

  /**
   * The gateway itself holds the upstream back (the caller reads slower than
   * the upstream writes): that silence is not the upstream's, so the watch
   * does not count it until the caller catches up.
   */
  private pauseForCaller(): void {
    const controller = this.controller
    if (controller === undefined || controller.paused) return
    controller.pause()
    this.holding = true
  }

  private readonly resumeForCaller = (): void => {
    const controller = this.controller
    if (controller === undefined || !controller.paused || this.ended || this.failure !== undefined || this.aborted) return
    this.holding = false
    this.touch()
    controller.resume()
  }

  // --- body -----------------------------------------------------------------

  readonly abort = (): void => {
    this.settled = true
    this.watch.remove(this)
    if (this.aborted) return
    this.aborted = true
    this.decompressor?.destroy()
    if (this.ended) return
    this.controller?.abort(new AbortedByGateway("aborted"))
    // A consumer still waiting (the gateway gave up on this body) is released.
    this.fail(UpstreamError.fault(this.call, "aborted by the gateway"))
  }

  readonly attach = (sink: ByteSink<UpstreamError>): void => {
    const buffered = this.buffered
    this.buffered = []
    this.sink = sink
    let room = true
    for (const chunk of buffered) if (!this.aborted) room = sink.write(chunk)
    if (this.failure !== undefined || this.ended) {
      this.wake()
    } else if (room) {
      this.resumeForCaller()
    } else {
      this.pauseForCaller()
      sink.onDrain(this.resumeForCaller)
    }
  }

  readAll(limit: number): Effect.Effect<Uint8Array, UpstreamError> {
    return Effect.callback<Uint8Array, UpstreamError>((resume) => {
      const chunks: Array<Uint8Array> = []
      let size = 0
      const settle = () => {
        for (const chunk of this.buffered) {
          size += chunk.byteLength
          chunks.push(chunk)
        }
        this.buffered = []
        if (size > limit) {
          // Stop downloading at once: the rest would be read only to be thrown away.
          this.abort()
          resume(Effect.fail(UpstreamError.fault(this.call, `response body exceeds ${limit} bytes`, { status: this.status })))
        } else if (this.failure !== undefined) {
          resume(Effect.fail(this.failure))
        } else if (this.ended) {
          resume(Effect.succeed(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)))
        } else {
          this.resumeForCaller()
          this.waiter = settle
        }
      }
      settle()
      return Effect.sync(this.abort)
    })
  }
}

/** The call with its signature's headers added, when it is signed (a streamed body cannot be: it is sent unsigned). */
const signed = (call: UpstreamCall): Effect.Effect<UpstreamCall, UpstreamError> => {
  const { sign, body } = call
  if (sign === undefined || (typeof body !== "string" && !(body instanceof Uint8Array))) return Effect.succeed(call)
  return Effect.tryPromise({
    try: () => sign({ method: call.method, path: call.path, headers: call.headers, body }),
    catch: () => UpstreamError.fault({ providerId: call.providerId, family: call.family }, "the request could not be signed", { reached: false })
  }).pipe(Effect.map((out) => ({ ...call, headers: { ...call.headers, ...out.headers }, body: out.body ?? body })))
}

/** Sends upstream requests. The live layer uses undici; tests script it. */
export class ProviderClient extends Context.Service<ProviderClient, {
  /**
   * Sends one request and resolves at its response head. The exchange belongs
   * to the caller's `Scope`: closing it aborts the exchange if still running.
   */
  readonly send: (call: UpstreamCall) => Effect.Effect<UpstreamResponse, UpstreamError, Scope.Scope>
}>()("gateway/providers/ProviderClient") {
  static readonly layer: Layer.Layer<ProviderClient> = Layer.effect(
    ProviderClient,
    Effect.gen(function*() {
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() =>
          new Agent({
            // No cap per origin: long-lived streams would otherwise queue behind each other
            // (1000 concurrent chats to one provider need 1000 sockets); idle ones are reused.
            connections: null,
            pipelining: 1,
            keepAliveTimeout: 30_000,
            keepAliveMaxTimeout: 600_000,
            // The watch on Effect's clock bounds the head and every gap between chunks (./deadline.ts).
            headersTimeout: 0,
            bodyTimeout: 0
          })
        ),
        (agent) => Effect.promise(() => agent.close())
      )
      const watch = new Watch(yield* Effect.clockWith(Effect.succeed))
      yield* Effect.forkScoped(watch.run)
      const open = (call: UpstreamCall) =>
        // The attempt's scope read in the step that uses it (`Effect.scope` is two).
        Effect.contextWith((context: Context.Context<Scope.Scope>) => {
          const scope = Context.get(context, Scope.Scope)
          const exchange = new Exchange(call, watch)
          const release = () => {
            exchange.abort()
            return Effect.void
          }
          return Effect.andThen(Scope.addFinalizerExit(scope, release), exchange.start(agent))
        })
      return ProviderClient.of({
        // The exchange is the attempt's resource: its release (registered before the
        // request goes out, and idempotent) aborts it unless it already finished.
        // Unsigned calls (all but SigV4 providers) go out as they are: no extra step on their path.
        send: (call) => (call.sign === undefined ? open(call) : Effect.flatMap(signed(call), open))
      })
    })
  )
}
