/**
 * A request program's answer as a value, a `Reply`: status, headers and a
 * body that is a value or a stream of bytes. Programs build replies; only the
 * HTTP edge's writer (`src/http/write-reply.ts`) puts one on a socket, so the
 * same program can answer a library call or a batch line.
 */
import { Cause, Context, Effect, Exit, Scope, Stream } from "effect"
import type { Array as Arr } from "effect"
import { nothingLeft, onExitInPlace, renderGatewayError, renderInfraError, renderUpstreamError } from "../domain/index.ts"
import type { AnyGatewayFailure, ChatStreamEvent, RenderedError } from "../domain/index.ts"
import type { ByteSink } from "../providers/transport.ts"
import type { RequestContext } from "./context.ts"

export const JSON_CONTENT_TYPE = "application/json"

/** Header values as a response head takes them; `undefined` ones are left out. */
export type ReplyHeaders = Readonly<Record<string, string | number | ReadonlyArray<string> | undefined>>

/**
 * A body sent as it is produced. A failure after the head cuts the
 * connection (the caller cannot mistake it for a whole answer); an event
 * stream ends with its own error frame instead (../forward/commit.ts).
 */
export type ReplyStream = Stream.Stream<Uint8Array, AnyGatewayFailure>

export interface Reply<Body extends string | Uint8Array | ReplyStream = string | Uint8Array | ReplyStream> {
  readonly _tag: "Reply"
  readonly status: number
  /** Lower-case names; the writer adds `x-request-id`, and `content-length` for a value body. */
  readonly headers: ReplyHeaders
  readonly body: Body
  /**
   * A streamed chat answer's canonical events, as its stages decoded them
   * (only when the request asked, `RequestContext.tapEvents`): after each
   * pull of the body, `take` hands over the events that pull produced.
   */
  readonly events: EventTap | undefined
}

export interface EventTap {
  readonly take: () => ReadonlyArray<ChatStreamEvent>
}

/** What a request program answers with. */
export type Answer = Reply

export const isValueBody = (body: string | Uint8Array | ReplyStream): body is string | Uint8Array =>
  typeof body === "string" || body instanceof Uint8Array

/**
 * Appends `headers` to a flat head list, after the request's own reply
 * headers that `headers` does not name; `content-length` left out when the
 * writer sized the body itself.
 */
export const pushHeaders = (
  head: Array<string>,
  headers: ReplyHeaders,
  requestHeaders: Readonly<Record<string, string>> | undefined,
  sized = false
): void => {
  if (requestHeaders !== undefined) for (const name in requestHeaders) if (headers[name] === undefined) head.push(name, requestHeaders[name])
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined || (sized && name === "content-length")) continue
    if (typeof value === "object") for (const item of value) head.push(name, item)
    else head.push(name, typeof value === "string" ? value : String(value))
  }
}

const NO_HEADERS: ReplyHeaders = {}

/**
 * A body that pushes itself: `start` hands its bytes to a sink as they come
 * (backpressure through the sink's `write` and `onDrain`), then ends or fails
 * it; `stop` abandons it (the reader is gone: its upstream is aborted).
 */
export interface PushSource {
  readonly start: (sink: ByteSink<AnyGatewayFailure>) => void
  readonly stop: () => void
}

/**
 * What runs once a body is done with, told how it ended: called then, it does its work in place
 * and returns undefined, or returns an effect for what is left to run (`onExitInPlace`).
 */
export type BodyExit = (exit: Exit.Exit<unknown, AnyGatewayFailure>) => Effect.Effect<void> | undefined

/** A `BodyExit` as an exit hook that always returns an effect (for `Stream.onExit`). */
const asEffect = (onExit: BodyExit): (exit: Exit.Exit<unknown, AnyGatewayFailure>) => Effect.Effect<void> => (exit) => onExit(exit) ?? Effect.void

/** What follows a push body's bytes, asked once its source ended well: another body, or nothing (it ends there). */
export type BodyNext = () => ReplyStream | undefined

/** Chunks a `Stream` reader of a push source lets pile up before the source is paused. */
const VIEW_HIGH_WATER = 16

/** A push source read as a pulled `Stream` (one run: a source starts once). */
const viewOf = (source: PushSource): ReplyStream =>
  Stream.fromPull(Effect.sync(() => {
    let chunks: Array<Uint8Array> = []
    let ended = false
    let failure: AnyGatewayFailure | undefined
    let waiter: (() => void) | undefined
    let drain: (() => void) | undefined
    let started = false
    const wake = (): void => {
      const go = waiter
      waiter = undefined
      go?.()
    }
    const sink: ByteSink<AnyGatewayFailure> = {
      write: (chunk) => {
        chunks.push(chunk)
        wake()
        return chunks.length < VIEW_HIGH_WATER
      },
      onDrain: (resume) => {
        // The reader may have taken the chunks already (between the write that said wait and this call).
        if (chunks.length < VIEW_HIGH_WATER) queueMicrotask(resume)
        else drain = resume
      },
      end: () => {
        ended = true
        wake()
      },
      fail: (error) => {
        failure = error
        wake()
      }
    }
    return Effect.callback<Arr.NonEmptyReadonlyArray<Uint8Array>, AnyGatewayFailure | Cause.Done>((resume) => {
      const settle = (): void => {
        if (chunks.length > 0) {
          const got = chunks as unknown as Arr.NonEmptyReadonlyArray<Uint8Array>
          chunks = []
          resume(Effect.succeed(got))
          const go = drain
          drain = undefined
          go?.()
        } else if (failure !== undefined) {
          resume(Effect.fail(failure))
        } else if (ended) {
          resume(Cause.done())
        } else {
          waiter = settle
        }
      }
      if (!started) {
        started = true
        source.start(sink)
      }
      settle()
    })
  })).pipe(Stream.onExit(() => Effect.sync(source.stop)))

/** The prototype Effect gives its streams (their `pipe`, and what marks them streams). */
const StreamPrototype: object = Object.getPrototypeOf(Stream.empty)

/**
 * A body stream with a push source. It is an Effect `Stream` whose channel
 * (the pulled form) is built only when something reads it as one: the
 * edge's writer never does, so a streamed reply costs no stream machinery.
 */
class PushBody {
  readonly source: PushSource
  readonly onExit: BodyExit | undefined
  readonly next: BodyNext | undefined
  #channel: ReplyStream["channel"] | undefined
  constructor(source: PushSource, onExit: BodyExit | undefined, next: BodyNext | undefined) {
    this.source = source
    this.onExit = onExit
    this.next = next
  }
  get channel(): ReplyStream["channel"] {
    if (this.#channel === undefined) {
      const { next } = this
      const view = viewOf(this.source)
      const whole = next === undefined ? view : Stream.concat(view, Stream.suspend(() => next() ?? Stream.empty))
      this.#channel = (this.onExit === undefined ? whole : Stream.onExit(whole, asEffect(this.onExit))).channel
    }
    return this.#channel
  }
}
Object.setPrototypeOf(PushBody.prototype, StreamPrototype)

/**
 * A body stream with a fast lane: the reply's writer pushes it to the socket
 * in the callbacks its source calls (no Effect per chunk); every other reader
 * (the library, a batch job, a test) reads it as the ordinary `Stream` it is.
 * A transformed copy (`Stream.map`…) is an ordinary stream.
 */
export const pushStream = (source: PushSource): ReplyStream => new PushBody(source, undefined, undefined) as unknown as ReplyStream

/**
 * The push source of a `pushStream` body, with what follows its bytes and
 * what runs when all of it is done; undefined for any other stream.
 */
export const pushSourceOf = (
  body: ReplyStream
): { readonly source: PushSource; readonly onExit: BodyExit | undefined; readonly next: BodyNext | undefined } | undefined =>
  body instanceof PushBody ? body : undefined

/**
 * `body`, followed by what `next` gives once it ended well (nothing: it ends
 * there), asked only then. A push body keeps its fast lane: the writer pushes
 * its bytes, then writes what follows; its own exit (`onBodyExit`) runs when
 * `body` ended, before `next` is asked, as it would in `Stream.concat`.
 */
export const followedBy = (body: ReplyStream, next: BodyNext): ReplyStream => {
  // (A body followed already is followed as any stream: no reply has two continuations.)
  if (!(body instanceof PushBody) || body.next !== undefined) return Stream.concat(body, Stream.suspend(() => next() ?? Stream.empty))
  const { source, onExit } = body
  if (onExit === undefined) return new PushBody(source, undefined, next) as unknown as ReplyStream
  // `body`'s exit runs once: ahead of what follows when something does, else when all is done.
  let exited = false
  const exitOnce: BodyExit = (exit) => {
    if (exited) return undefined
    exited = true
    return onExit(exit)
  }
  return new PushBody(source, exitOnce, () => {
    const tail = next()
    if (tail === undefined) return undefined
    const left = exitOnce(Exit.void)
    return left === undefined ? tail : Stream.concat(Stream.fromEffectDrain(left), tail)
  }) as unknown as ReplyStream
}

/**
 * Releases an answer nobody will read (a hedged race's second answer): a
 * stream's upstream is stopped and what runs when it is done (its attempt's
 * scope closing) runs now. A value body holds nothing open.
 */
export const discardReply = (answer: Reply): Effect.Effect<void> => {
  if (isValueBody(answer.body)) return Effect.void
  const push = pushSourceOf(answer.body)
  if (push === undefined) return Effect.void
  push.source.stop()
  return push.onExit?.(Exit.void) ?? Effect.void
}

/** `body`, `tap` told of each chunk as it goes out (its fast lane kept, what follows it tapped too). */
export const tapChunks = (body: ReplyStream, tap: (chunk: Uint8Array) => void): ReplyStream => {
  if (!(body instanceof PushBody)) {
    return Stream.map(body, (chunk) => {
      tap(chunk)
      return chunk
    })
  }
  const { source, next } = body
  const tapped: PushSource = {
    start: (sink) =>
      source.start({
        write: (chunk) => {
          tap(chunk)
          return sink.write(chunk)
        },
        onDrain: (resume) => sink.onDrain(resume),
        end: () => sink.end(),
        fail: (error) => sink.fail(error)
      }),
    stop: () => source.stop()
  }
  const tappedNext: BodyNext | undefined = next === undefined ? undefined : () => {
    const tail = next()
    return tail === undefined ? undefined : tapChunks(tail, tap)
  }
  return new PushBody(tapped, body.onExit, tappedNext) as unknown as ReplyStream
}

/**
 * `body`, running `onExit` once it is done with, told how it ended (its fast lane kept), after
 * what ran there before: a hook done in place leaves the next to be called at once, else the
 * next is called once the effect left by the one before has run.
 */
export const onBodyExit = (body: ReplyStream, onExit: BodyExit): ReplyStream => {
  if (!(body instanceof PushBody)) return Stream.onExit(body, asEffect(onExit))
  const before = body.onExit
  return new PushBody(body.source, before === undefined ? onExit : (exit) => {
    const left = before(exit)
    return left === undefined ? onExit(exit) : Effect.andThen(left, Effect.suspend(() => onExit(exit) ?? Effect.void))
  }, body.next) as unknown as ReplyStream
}

/** `body`, running `release` once it is done with, however it ended (its fast lane kept). */
export const ensuringBody = (body: ReplyStream, release: Effect.Effect<void>): ReplyStream => onBodyExit(body, () => release)

export const reply = <Body extends string | Uint8Array | ReplyStream>(status: number, headers: ReplyHeaders, body: Body, events?: EventTap): Reply<Body> => ({
  _tag: "Reply",
  status,
  headers,
  body,
  events
})

/**
 * A whole body of the gateway's own. Anthropic SDKs read an error's id from
 * `request-id` (`err.requestID`): an error gets the same id as `x-request-id`.
 */
export const bodyReply = (
  ctx: RequestContext,
  status: number,
  body: string | Uint8Array,
  /** Undefined only to forward an upstream body that came without one. */
  contentType: string | undefined,
  headers: ReplyHeaders = NO_HEADERS
): Reply<string | Uint8Array> => {
  const errorId = status >= 400 && ctx.caller === "anthropic"
  if (contentType === undefined && !errorId) return reply(status, headers, body)
  const all: Record<string, string | number | ReadonlyArray<string> | undefined> = {}
  if (contentType !== undefined) all["content-type"] = contentType
  if (errorId) all["request-id"] = ctx.requestId
  for (const name in headers) all[name] = headers[name]
  return reply(status, all, body)
}

export const jsonReply = (ctx: RequestContext, status: number, value: unknown, headers?: ReplyHeaders): Reply<string> =>
  bodyReply(ctx, status, JSON.stringify(value), JSON_CONTENT_TYPE, headers) as Reply<string>

export const renderFailure = (ctx: RequestContext, failure: AnyGatewayFailure): RenderedError => {
  switch (failure._tag) {
    case "UpstreamError":
      return renderUpstreamError(failure, ctx.caller, ctx.requestId)
    case "GatewayError":
      return renderGatewayError(failure, ctx.caller, ctx.requestId)
    case "InfraError":
      return renderInfraError(failure, ctx.caller, ctx.requestId)
  }
}

/** Notes a failure on the request's log line: its code, and the provider it came from. */
export const logFailure = (ctx: RequestContext, failure: AnyGatewayFailure): void => {
  ctx.log.error_code = failure._tag === "UpstreamError" ? failure.reason : failure.code
  if (failure._tag === "UpstreamError") ctx.log.provider = failure.provider
}

/** A failure in the caller's envelope, noted on the log line. */
export const failureReply = (ctx: RequestContext, failure: AnyGatewayFailure): Reply<string | Uint8Array> => {
  const rendered = renderFailure(ctx, failure)
  logFailure(ctx, failure)
  return bodyReply(ctx, rendered.status, rendered.body, rendered.contentType, rendered.headers)
}

/**
 * Runs an attempt in a scope of its own, forked from the request's (the edge
 * closes that one when the request ends): a failed attempt or a whole body
 * closes it at once (its upstream request released), a stream body when the
 * stream ends; a reply never written is released with the request.
 */
export const attemptScoped = <B extends string | Uint8Array | ReplyStream, E, R>(
  attempt: Effect.Effect<Reply<B>, E, R>
): Effect.Effect<Reply<B>, E, Exclude<R, Scope.Scope> | Scope.Scope> =>
  // The request's scope read and forked in one step (`Effect.scope` and `Scope.fork` took four).
  Effect.contextWith((context: Context.Context<Scope.Scope>) => {
    const scope = Scope.forkUnsafe(Context.get(context, Scope.Scope))
    // Closed in the exit's hook (uninterruptible there, as `Scope.close` would make it): a finalizer that
    // did its work in place (an exchange's release) leaves nothing to run.
    const closed = onExitInPlace(Scope.provide(attempt, scope), (exit) =>
      Exit.isSuccess(exit) && !isValueBody(exit.value.body) ? undefined : nothingLeft(Scope.closeUnsafe(scope, exit)))
    return closed.pipe(
      Effect.map((answer) => {
        const { body } = answer
        if (isValueBody(body)) return answer
        return reply(answer.status, answer.headers, onBodyExit(body, () => nothingLeft(Scope.closeUnsafe(scope, Exit.void))) as B, answer.events)
      })
    )
  })
