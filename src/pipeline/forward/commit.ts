/**
 * The commit rule of every streamed answer, as one operator both chat paths
 * (and every forwarded body) run: the upstream is read until its answer
 * commits (its first content or its finish, as the stage judges); before that
 * a failure is the attempt's, so routing may retry or fail over; after it the
 * answer is a `Reply` whose body is the held start followed by the rest, and a
 * failure becomes the stage's in-band error frame (or, for a stage without
 * one, cuts the body).
 *
 * Details
 * - Push, not pull: the operator is the sink the upstream body is attached to
 *   (`UpstreamBody.attach`), and a stage is a plain per-chunk function that
 *   appends the caller's bytes to `out`. Each chunk goes from undici's
 *   callback through the stage to the reader in the same call, with no Effect
 *   and no fiber switch per chunk (a pulled `Stream` cost 1.6 to 1.9 times
 *   the CPU per stream, see docs/architecture.md). The body is a
 *   `pushStream`: the edge's writer takes its push source; any other reader
 *   (the library, a batch job) reads it as an ordinary `Stream`.
 * - Between the commit and the reader's start a few chunks wait in `held`,
 *   then the upstream is paused, so a reply not yet read buffers no more.
 * - Taps (telemetry, the output guardrail's record, the cache) ride inside
 *   the stage's decoding, never in the operator.
 * - The body belongs to the attempt's scope: whoever closes that scope (the
 *   reply's end, or the request's end when the reply is never written) aborts
 *   the upstream; a reader that stops (the caller gone) aborts it at once.
 * - `ttft_ms` (`firstContentWithin`) is a timeout on Effect's `Clock` around
 *   the attempt up to its commit: no content in time and the attempt fails
 *   as a timeout (`first_token`), before anything reached the caller, so
 *   routing retries or fails over; its interruption aborts the upstream.
 *   Unset, the attempt is returned untouched: nothing on the request path.
 * - A draining shutdown stops a committed stream through the request context
 *   (`stopStream`): the upstream is aborted and the stage writes its error
 *   frame, so the caller's stream ends cleanly, written by the reply's writer.
 */
import { Effect } from "effect"
import { UpstreamError } from "../../domain/index.ts"
import type { AnyGatewayFailure, ErrorClass, FailureSource, StreamError } from "../../domain/index.ts"
import type { ByteSink, UpstreamBody } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { pushStream } from "../reply.ts"
import type { ReplyStream } from "../reply.ts"

/**
 * What a stage says of the chunk it read: keep holding; the answer commits
 * (or was committed); the stream ends here (its last bytes, an error frame
 * perhaps, are in `out`); or it failed before committing anything.
 */
export type StageVerdict = "hold" | "commit" | "end" | StreamError

/** Why a committed stream is cut: the upstream failed, or the gateway is shutting down. */
export type StreamStop = UpstreamError | "shutdown"

/**
 * Where a stage puts the caller's bytes, in order: held by the operator, or
 * (once the answer committed and its reader started) handed straight on. An
 * array is one.
 */
export interface ChunkOut {
  push(chunk: Uint8Array): unknown
}

export interface StreamStage {
  /** Reads an upstream chunk, putting what the caller gets to `out`. */
  readonly push: (chunk: Uint8Array, out: ChunkOut) => StageVerdict
  /** The upstream ended: the rest of the answer to `out`; "end", or the failure when nothing was committed. */
  readonly end: (out: ChunkOut) => "end" | StreamError
  /**
   * A committed stream is cut: its error frame to `out`. A stage without one
   * (a body that is not an event stream) fails its body instead, and the
   * writer cuts the connection: the caller cannot mistake it for a whole answer.
   */
  readonly stop: ((reason: StreamStop, out: ChunkOut) => void) | undefined
}

/** Chunks held between the commit and the reader's start before the upstream is paused. */
const HELD_BEFORE_READER = 16

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))

/**
 * Reads `body` through `stage` until the answer commits. Fails with the
 * upstream's failure, or `failed(error)` for a stream that reported an error
 * before any content; succeeds with the caller's body stream, or with
 * `whole`, the whole body as a value when the upstream ended before the
 * stage committed.
 */
const commitBody = (
  /** Where a committed event stream registers its stop for a draining shutdown. */
  ctx: RequestContext | undefined,
  body: UpstreamBody,
  stage: StreamStage,
  failed: (error: StreamError) => UpstreamError,
  whole: boolean
): Effect.Effect<Uint8Array | ReplyStream, UpstreamError> =>
  Effect.callback<Uint8Array | ReplyStream, UpstreamError>((resume) => {
    /** The caller's bytes not yet handed on: before the commit the held start, after it what the reader has not had. */
    let held: Array<Uint8Array> = []
    let committed = false
    /** Nothing more of the upstream is read: it ended, failed, was cut by the stage or stopped by the reader. */
    let finished = false
    /** How the body ends once `held` is handed on. */
    let ending: "end" | AnyGatewayFailure | undefined
    let reader: ByteSink<AnyGatewayFailure> | undefined
    /** The reader took the bytes it was last handed without asking to wait. */
    let readerRoom = true
    /** The upstream's resume, while it waits for the reader to start. */
    let paused: (() => void) | undefined
    let stopping = false

    /**
     * The stage's output: held until the answer committed and its reader
     * started, then written straight to the reader (no array per chunk).
     */
    const out: ChunkOut = {
      push: (chunk: Uint8Array) => {
        if (reader === undefined || !committed) held.push(chunk)
        else if (!reader.write(chunk)) readerRoom = false
      }
    }
    const handOn = (to: ByteSink<AnyGatewayFailure>): boolean => {
      if (held.length === 0) return true
      const chunks = held
      held = []
      let room = true
      for (const chunk of chunks) room = to.write(chunk)
      readerRoom = room
      return room
    }
    const close = (to: ByteSink<AnyGatewayFailure>): void => {
      const how = ending
      ending = undefined
      if (how === "end") to.end()
      else if (how !== undefined) to.fail(how)
    }
    const source = {
      start: (sink: ByteSink<AnyGatewayFailure>): void => {
        reader = sink
        const room = handOn(sink)
        if (finished) return close(sink)
        const go = paused
        paused = undefined
        if (go === undefined) return
        if (room) go()
        else sink.onDrain(go)
      },
      stop: (): void => {
        if (finished) return
        finished = true
        body.abort()
      }
    }
    const commit = (): void => {
      committed = true
      if (ctx !== undefined && stage.stop !== undefined) {
        // Declared, then stored: V8's parser marks a function literal assigned to a property
        // (`ctx.stopStream = () => …`) for the old generation, taking it for setup code. Born
        // old, the closure outlived its stream as garbage until the next full GC, and kept all
        // this callback's state (the exchange, the reader, the fiber) from young-generation
        // collections: each stream's ~9 KB was copied twice and promoted. Measured at full load
        // (bench/README.md): promoted per stream 9.7 KB → 0.1 KB, full GCs per 6,000 streams
        // 9 → 1, CPU per stream 223 → 155 µs.
        const stop = (): void => {
          stopping = true
          body.abort()
        }
        ctx.stopStream = stop
      }
      resume(Effect.succeed(whole && ending === "end" ? concat(held) : pushStream(source)))
    }
    const fail = (error: UpstreamError): void => {
      finished = true
      body.abort()
      resume(Effect.fail(error))
    }

    body.attach({
      write: (chunk) => {
        if (finished) return true
        readerRoom = true
        const verdict = stage.push(chunk, out)
        if (typeof verdict === "object") {
          fail(failed(verdict))
          return true
        }
        if (verdict === "end") {
          finished = true
          ending = "end"
          // The upstream may still be sending (events after a break): nothing more of it is read.
          body.abort()
        }
        if (!committed) {
          if (verdict === "hold") return true
          commit()
          // The reader may have started already (the program can run on to the writer inside
          // `resume`); until it does, a few chunks are held rather than pausing the upstream
          // (a pause and resume per stream costs more than the wait it saves).
          return finished || (reader === undefined ? held.length < HELD_BEFORE_READER : readerRoom)
        }
        if (reader === undefined) return finished || held.length < HELD_BEFORE_READER
        if (finished) close(reader)
        return readerRoom
      },
      onDrain: (go) => {
        if (reader !== undefined) reader.onDrain(go)
        else paused = go
      },
      end: () => {
        if (finished) return
        const verdict = stage.end(out)
        if (typeof verdict === "object") return fail(failed(verdict))
        finished = true
        ending = "end"
        if (!committed) return commit()
        if (reader !== undefined) close(reader)
      },
      fail: (error) => {
        if (finished) return
        if (!committed) return fail(error)
        finished = true
        if (stage.stop !== undefined) {
          stage.stop(stopping ? "shutdown" : error, out)
          ending = "end"
        } else {
          ending = error
        }
        if (reader !== undefined) close(reader)
      }
    })
    return Effect.sync(() => {
      if (!committed) source.stop()
    })
  })

/**
 * Reads `body` through `stage` until the answer commits. Fails with the
 * upstream's failure, or `failed(error)` for a stream that reported an error
 * before any content; succeeds with the caller's body stream.
 */
export const commitStream = (
  ctx: RequestContext,
  body: UpstreamBody,
  stage: StreamStage,
  failed: (error: StreamError) => UpstreamError
): Effect.Effect<ReplyStream, UpstreamError> => commitBody(ctx, body, stage, failed, false) as Effect.Effect<ReplyStream, UpstreamError>

/**
 * As `commitStream`, but a body the upstream ended before the stage committed
 * comes whole, as a value (it can still be checked, and is sent with its length).
 */
export const holdBody = (
  ctx: RequestContext | undefined,
  body: UpstreamBody,
  stage: StreamStage,
  failed: (error: StreamError) => UpstreamError
): Effect.Effect<Uint8Array | ReplyStream, UpstreamError> => commitBody(ctx, body, stage, failed, true)

/**
 * `ttft_ms` over a streamed attempt (its head and its commit) at `provider`:
 * no content within `ttftMs` and it fails as a `first_token` timeout;
 * `ttftMs` undefined leaves the attempt as it is.
 */
export const firstContentWithin = <A, R>(
  attempt: Effect.Effect<A, UpstreamError, R>,
  ttftMs: number | undefined,
  provider: { readonly id: string; readonly family: FailureSource["family"] }
): Effect.Effect<A, UpstreamError, R> =>
  ttftMs === undefined ? attempt : Effect.timeoutOrElse(attempt, {
    duration: ttftMs,
    orElse: () => Effect.fail(UpstreamError.fault({ providerId: provider.id, family: provider.family }, `no content within ${ttftMs} ms`, { timeout: "first_token" }))
  })

/** The error frame's terms for a stop: the gateway shutting down, or the upstream timed out or failed. */
export const stopFrame = (reason: StreamStop): { readonly reason: ErrorClass; readonly message: string; readonly status: number; readonly timedOut: boolean } =>
  reason === "shutdown"
    ? { reason: "upstream", message: "the gateway shut down before the stream was complete", status: 503, timedOut: false }
    : reason.timedOut
    ? { reason: reason.reason, message: "upstream stream timed out", status: 504, timedOut: true }
    : { reason: reason.reason, message: "upstream stream failed", status: 502, timedOut: false }
