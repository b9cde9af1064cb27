/**
 * The commit rule of every streamed answer, as one operator both chat paths
 * (and every forwarded event stream) run: the upstream is read until its
 * answer commits (its first content or its finish, as the stage judges);
 * before that a failure is the attempt's, so routing may retry or fail over;
 * after it the answer is a `Reply` whose body is the held start followed by
 * the rest, and a failure becomes the stage's in-band error frame.
 *
 * Details
 * - A stage is a plain per-chunk function (no Effect per chunk): the operator
 *   hands it each array of chunks a pull gave, and it appends the caller's
 *   bytes to `out`. Taps (telemetry, the output guardrail's record, the
 *   cache) ride inside the stage's decoding, never in the operator.
 * - The body belongs to the attempt's scope: the upstream is read through a
 *   pull opened in it, and whoever closes that scope (the reply's end, or the
 *   request's end when the reply is never written) aborts the upstream.
 * - A draining shutdown stops a committed stream through the request context
 *   (`stopStream`): the upstream is aborted and the stage writes its error
 *   frame, so the caller's stream ends cleanly, written by the reply's writer.
 */
import { Cause, Channel, Effect, Pull, Stream } from "effect"
import type { Array as Arr, Scope } from "effect"
import type { ErrorClass, StreamError, UpstreamError } from "../../domain/index.ts"
import type { UpstreamBody } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"

/**
 * What a stage says of the chunks it read: keep holding; the answer commits
 * (or was committed); the stream ends here (its last bytes, an error frame
 * perhaps, are in `out`); or it failed before committing anything.
 */
export type StageVerdict = "hold" | "commit" | "end" | StreamError

/** Why a committed stream is cut: the upstream failed, or the gateway is shutting down. */
export type StreamStop = UpstreamError | "shutdown"

export interface StreamStage {
  /** Reads upstream chunks, appending what the caller gets to `out`. */
  readonly push: (chunks: ReadonlyArray<Uint8Array>, out: Array<Uint8Array>) => StageVerdict
  /** The upstream ended: the rest of the answer to `out`; "end", or the failure when nothing was committed. */
  readonly end: (out: Array<Uint8Array>) => "end" | StreamError
  /** A committed stream is cut: its error frame to `out`. */
  readonly stop: (reason: StreamStop, out: Array<Uint8Array>) => void
}

type Chunks = readonly [Uint8Array, ...Array<Uint8Array>]

/**
 * The pull of a stream read by one reader in the current scope: what
 * `Stream.toPull` gives, less the lock and the context it wraps every pull in
 * (per chunk on the hottest path; a body has one reader, and needs no
 * context). The stream's finalizers run when the scope closes.
 */
export const pullOf = <A, E>(stream: Stream.Stream<A, E>): Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E>, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => Channel.toTransform(stream.channel)(Cause.done(), scope))

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
): Effect.Effect<Stream.Stream<Uint8Array>, UpstreamError, Scope.Scope> =>
  Effect.flatMap(pullOf(body.stream), (pull) => {
    const held: Array<Uint8Array> = []
    /** Set once the answer ended (or was cut): the next pull is the last. */
    let done = false
    let stopping = false

    /** One pull through the stage after the commit: the caller's bytes (maybe none); a failure becomes the error frame. */
    const step = Effect.matchEffect(pull, {
      onFailure: (error) => {
        const out: Array<Uint8Array> = []
        if (Cause.isDone(error)) stage.end(out)
        else stage.stop(stopping ? "shutdown" : error, out)
        done = true
        return Effect.succeed(out)
      },
      onSuccess: (chunks) => {
        const out: Array<Uint8Array> = []
        if (stage.push(chunks, out) === "end") finish()
        return Effect.succeed(out)
      }
    })
    const next: Pull.Pull<Chunks> = Effect.suspend(() => {
      if (held.length > 0) return Effect.succeed(held.splice(0) as unknown as Chunks)
      if (done) return Cause.done()
      return Effect.flatMap(step, (out) => (out.length > 0 ? Effect.succeed(out as unknown as Chunks) : next))
    })

    const finish = (): void => {
      done = true
      // The upstream may still be sending (events after a break): nothing more of it is read.
      body.abort()
    }

    const committed = (): Stream.Stream<Uint8Array> => {
      ctx.stopStream = () => {
        stopping = true
        body.abort()
      }
      return Stream.fromPull(Effect.succeed(next))
    }

    /** Before the commit: pull, hold, and decide. */
    const read: Effect.Effect<Stream.Stream<Uint8Array>, UpstreamError> = Effect.matchEffect(pull, {
      onFailure: (error) => {
        if (!Cause.isDone(error)) return Effect.fail(error)
        const verdict = stage.end(held)
        if (typeof verdict === "object") return Effect.fail(failed(verdict))
        done = true
        return Effect.succeed(committed())
      },
      onSuccess: (chunks) => {
        const verdict = stage.push(chunks, held)
        if (verdict === "hold") return read
        if (typeof verdict === "object") return Effect.fail(failed(verdict))
        if (verdict === "end") finish()
        return Effect.succeed(committed())
      }
    })
    return read
  })

/** The error frame's terms for a stop: the gateway shutting down, or the upstream timed out or failed. */
export const stopFrame = (reason: StreamStop): { readonly reason: ErrorClass; readonly message: string; readonly status: number; readonly timedOut: boolean } =>
  reason === "shutdown"
    ? { reason: "upstream", message: "the gateway shut down before the stream was complete", status: 503, timedOut: false }
    : reason.timedOut
    ? { reason: reason.reason, message: "upstream stream timed out", status: 504, timedOut: true }
    : { reason: reason.reason, message: "upstream stream failed", status: 502, timedOut: false }
