/**
 * A scripted `ProviderClient` for tests, yours and ours: no sockets, no real
 * time. Each upstream call is answered by your handler with a `TestReply`
 * (JSON, an error with or without Retry-After, a stream of chunks that may
 * break, a hang, a delay); every call is recorded. Delays use Effect's clock,
 * so `TestClock.adjust` drives them.
 *
 * ```ts
 * const calls: Array<UpstreamCall> = []
 * const layer = layerTest((call) => call.providerId === "openai" ? TestReply.error(429) : TestReply.json(200, {...}), calls)
 * ```
 */
import { Duration, Effect, Layer } from "effect"
import type { Scope } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { UpstreamError } from "../domain/index.ts"
import { timedOut } from "./deadline.ts"
import { parseRetryAfterMs } from "./retry-after.ts"
import { ProviderClient } from "./transport.ts"
import type { ByteSink, UpstreamBody, UpstreamCall, UpstreamResponse } from "./transport.ts"

export type TestReply =
  | {
    readonly _tag: "Respond"
    readonly status: number
    readonly headers: IncomingHttpHeaders
    readonly chunks: ReadonlyArray<Uint8Array>
    readonly failAfter?: number | undefined
    readonly stallAfter?: number | undefined
  }
  | { readonly _tag: "NetworkError"; readonly message: string }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Delay"; readonly duration: Duration.Input; readonly then: TestReply }

const encoder = new TextEncoder()

/** How a scripted stream goes wrong: it breaks (`failAfter` frames), or goes silent (`stallAfter` frames). */
export interface StreamFaults {
  readonly failAfter?: number | undefined
  readonly stallAfter?: number | undefined
}

export const TestReply = {
  /** A JSON response. */
  json: (status: number, body: unknown, headers: IncomingHttpHeaders = {}): TestReply => ({
    _tag: "Respond",
    status,
    headers: { "content-type": "application/json", ...headers },
    chunks: [encoder.encode(JSON.stringify(body))]
  }),
  /** An upstream error; `retryAfter` (seconds) sets the Retry-After header. */
  error: (status: number, options: { readonly body?: unknown; readonly retryAfter?: number } = {}): TestReply => ({
    _tag: "Respond",
    status,
    headers: { "content-type": "application/json", ...(options.retryAfter === undefined ? {} : { "retry-after": String(options.retryAfter) }) },
    chunks: [encoder.encode(JSON.stringify(options.body ?? { error: { message: `status ${status}`, type: "error", code: null } }))]
  }),
  /**
   * A successful SSE stream of raw frames; with `failAfter` the connection
   * breaks after that many frames; with `stallAfter` it goes silent after
   * that many, open until the gateway gives up on it (a slow first token).
   */
  stream: (frames: ReadonlyArray<string>, options: StreamFaults = {}): TestReply => ({
    _tag: "Respond",
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: frames.map((frame) => encoder.encode(frame)),
    failAfter: options.failAfter,
    stallAfter: options.stallAfter
  }),
  /**
   * A complete chat answer streamed in a provider's own format, one content
   * event per piece (OpenAI chunks, or Anthropic events); with `failAfter` the
   * connection breaks after that many frames (the opening frame counts); with
   * `stallAfter` it goes silent after that many.
   */
  chatStream: (family: "openai" | "anthropic", pieces: ReadonlyArray<string>, options: StreamFaults = {}): TestReply =>
    TestReply.stream(family === "openai" ? openAiFrames(pieces) : anthropicFrames(pieces), options),
  /** The connection fails before any response (connection refused, reset). */
  networkError: (message = "ECONNRESET"): TestReply => ({ _tag: "NetworkError", message }),
  /** Never answers: only a timeout ends the attempt. */
  hang: { _tag: "Hang" } as TestReply,
  /** Answers `then` after `duration` of (virtual) time. */
  delay: (duration: Duration.Input, then: TestReply): TestReply => ({ _tag: "Delay", duration, then })
}

const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`
const event = (name: string, value: unknown) => `event: ${name}\n${data(value)}`

const openAiFrames = (pieces: ReadonlyArray<string>): Array<string> => {
  const chunk = (delta: unknown, finish: string | null = null) =>
    data({ id: "chatcmpl-test", object: "chat.completion.chunk", created: 0, model: "test", choices: [{ index: 0, delta, finish_reason: finish }] })
  return [chunk({ role: "assistant", content: "" }), ...pieces.map((content) => chunk({ content })), chunk({}, "stop"), "data: [DONE]\n\n"]
}

const anthropicFrames = (pieces: ReadonlyArray<string>): Array<string> => [
  event("message_start", {
    type: "message_start",
    message: { id: "msg_test", type: "message", role: "assistant", model: "test", content: [], stop_reason: null, usage: { input_tokens: 1, output_tokens: 0 } }
  }),
  event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  ...pieces.map((text) => event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
  event("content_block_stop", { type: "content_block_stop", index: 0 }),
  event("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: pieces.length } }),
  event("message_stop", { type: "message_stop" })
]

/** A scripted network failure: its message is the error code (`ECONNRESET`). */
const failure = (call: UpstreamCall, message: string): UpstreamError => UpstreamError.fault(call, message, { networkCode: message })

/** A scripted body: `idle` is how a stalled one fails once the call's idle timeout has passed. */
type ScriptedBody = UpstreamBody & { readonly idle: () => void }

/** A scripted body, pushed chunk by chunk with the sink's backpressure; it stops when aborted. */
const bodyOf = (call: UpstreamCall, chunks: ReadonlyArray<Uint8Array>, { failAfter, stallAfter }: StreamFaults): ScriptedBody => {
  const cut = stallAfter ?? failAfter
  const delivered = cut === undefined ? chunks : chunks.slice(0, cut)
  const broken = stallAfter === undefined && failAfter !== undefined
  const stalled = stallAfter !== undefined
  let aborted = false
  let attached: ByteSink<UpstreamError> | undefined
  return {
    attach: (sink: ByteSink<UpstreamError>) => {
      attached = sink
      let next = 0
      const go = (): void => {
        while (next < delivered.length) {
          if (aborted) return
          if (!sink.write(delivered[next++])) return sink.onDrain(go)
        }
        if (aborted || stalled) return
        if (broken) sink.fail(failure(call, "ECONNRESET"))
        else sink.end()
      }
      go()
    },
    readAll: () =>
      stalled ? Effect.never : broken ? Effect.fail(failure(call, "ECONNRESET")) : Effect.sync(() => Buffer.concat([...delivered])),
    abort: () => {
      aborted = true
    },
    idle: () => {
      if (!aborted) attached?.fail(timedOut(call, "idle"))
    }
  }
}

const respond = (call: UpstreamCall, reply: TestReply): Effect.Effect<UpstreamResponse, UpstreamError, Scope.Scope> => {
  switch (reply._tag) {
    case "Hang":
      return Effect.never
    case "Delay":
      return Effect.andThen(Effect.sleep(reply.duration), respond(call, reply.then))
    case "NetworkError":
      return Effect.fail(failure(call, reply.message))
    case "Respond": {
      if (reply.status < 400) {
        const body = bodyOf(call, reply.chunks, reply)
        const response = Effect.succeed<UpstreamResponse>({ status: reply.status, headers: reply.headers, body })
        if (reply.stallAfter === undefined) return response
        // A stalled body fails as the transport's idle watch fails it: on the same Clock, within the call's scope.
        return Effect.tap(response, () => Effect.forkScoped(Effect.andThen(Effect.sleep(call.idleTimeoutMs), Effect.sync(body.idle))))
      }
      return Effect.fail(
        UpstreamError.fromResponse(call, reply.status, Buffer.concat([...reply.chunks]), { retryAfterMs: parseRetryAfterMs(reply.headers) })
      )
    }
  }
}

/** A `ProviderClient` layer answering every call with `handler`; calls are appended to `calls`. */
export const layerTest = (
  handler: (call: UpstreamCall, index: number) => TestReply,
  calls: Array<UpstreamCall> = []
): Layer.Layer<ProviderClient> =>
  Layer.succeed(
    ProviderClient,
    ProviderClient.of({
      send: (call) =>
        Effect.suspend(() => {
          calls.push(call)
          // A scripted reply gives no sign of life before its head: its deadline is a plain timeout on the same Clock.
          return respond(call, handler(call, calls.length - 1)).pipe(
            Effect.timeoutOrElse({ duration: call.idleTimeoutMs, orElse: () => Effect.fail(timedOut(call, "head")) })
          )
        })
    })
  )
