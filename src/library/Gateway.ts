/**
 * The gateway as a library: the same routes, stages and error rendering as
 * the server, answering requests made in memory. `Gateway.request` takes a
 * request as it would arrive on the wire; the typed helpers (`chat`,
 * `messages`, `responses`, `embeddings` and their stream forms) build it, read
 * the answer and fail with a `GatewayRequestError` for anything but a 2xx.
 *
 * Details
 * - The answer is what an HTTP caller would get, byte for byte: the caller's
 *   format (OpenAI or Anthropic errors), `x-gw-*` headers, streamed events.
 * - Headers of `RequestOptions` go with the request: a caller's provider key
 *   (`authorization`, `x-api-key`), `x-gw-project-id`, `x-gw-cache`, …
 * - Interrupting a request (or leaving a stream early) aborts its upstream
 *   call, as a caller hanging up would.
 * - Requests are traced like served ones when `[telemetry]` is on.
 */
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { makeRouter, readLocal, runLocal } from "../http/index.ts"
import type { LocalRequest, LocalResponse } from "../http/index.ts"
import type { ChatStreamEvent } from "../domain/index.ts"
import { Log, Telemetry } from "../pipeline/index.ts"
import { SseParser } from "../providers/sse.ts"
import type {
  AnthropicMessage,
  AnthropicMessageRequest,
  ChatCompletion,
  ChatCompletionRequest,
  EmbeddingsRequest,
  EmbeddingsResponse,
  JsonObject,
  ResponsesRequest,
  ResponsesResponse,
  StreamEvent
} from "./types.ts"

/** Extra request headers (lower- or mixed-case names). */
export interface RequestOptions {
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** An answer that was not a 2xx, or a stream that reported an error: the status, the error code and the body as sent. */
export class GatewayRequestError extends Schema.TaggedError<GatewayRequestError>()("GatewayRequestError", {
  status: Schema.Number,
  /** `error.code` of the body (or `x-gw-error-code`), when there is one. */
  code: Schema.optional(Schema.String),
  message: Schema.String,
  /** The parsed error body (or the stream's error event). */
  body: Schema.Unknown,
  headers: Schema.Record(Schema.String, Schema.String)
}) {}

export interface GatewayShape {
  /** Any request, as on the wire: the answer's head, and its body as a stream. */
  readonly request: (request: LocalRequest) => Effect.Effect<LocalResponse>
  /** `POST /v1/chat/completions`, not streamed. */
  readonly chat: (body: ChatCompletionRequest, options?: RequestOptions) => Effect.Effect<ChatCompletion, GatewayRequestError>
  /** `POST /v1/chat/completions` streamed: the `chat.completion.chunk` objects, up to `[DONE]`. */
  readonly chatStream: (body: ChatCompletionRequest, options?: RequestOptions) => Stream.Stream<StreamEvent, GatewayRequestError>
  /**
   * `POST /v1/chat/completions` streamed, as the gateway's canonical events
   * (`message_start`, `text_delta`, `tool_call_*`, `message_delta`,
   * `message_stop`), decoded from the provider's stream whatever its format;
   * an error the stream reports fails it.
   */
  readonly chatEvents: (body: ChatCompletionRequest, options?: RequestOptions) => Stream.Stream<ChatStreamEvent, GatewayRequestError>
  /** `POST /v1/messages` (Anthropic), not streamed. */
  readonly messages: (body: AnthropicMessageRequest, options?: RequestOptions) => Effect.Effect<AnthropicMessage, GatewayRequestError>
  /** `POST /v1/messages` streamed: the typed events, up to `message_stop`. */
  readonly messagesStream: (body: AnthropicMessageRequest, options?: RequestOptions) => Stream.Stream<StreamEvent, GatewayRequestError>
  /** `POST /v1/responses`, not streamed. */
  readonly responses: (body: ResponsesRequest, options?: RequestOptions) => Effect.Effect<ResponsesResponse, GatewayRequestError>
  /** `POST /v1/responses` streamed: the `response.*` events. */
  readonly responsesStream: (body: ResponsesRequest, options?: RequestOptions) => Stream.Stream<StreamEvent, GatewayRequestError>
  /** `POST /v1/embeddings`. */
  readonly embeddings: (body: EmbeddingsRequest, options?: RequestOptions) => Effect.Effect<EmbeddingsResponse, GatewayRequestError>
}

const decoder = new TextDecoder()

/** JSON when it parses, else the text itself (a plain-text error body). */
export const parseText = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const parseJson = (bytes: Uint8Array): unknown => parseText(decoder.decode(bytes))

const isObject = (value: unknown): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** The error of a non-2xx answer (or an in-band stream error), in the library's terms. */
const requestError = (status: number, headers: Readonly<Record<string, string>>, body: unknown): GatewayRequestError => {
  const error = isObject(body) && isObject(body.error) ? body.error : undefined
  const code = typeof error?.code === "string" ? error.code : headers["x-gw-error-code"]
  const message = typeof error?.message === "string" ? error.message : typeof body === "string" && body !== "" ? body : `the gateway answered ${status}`
  return new GatewayRequestError({ status, ...(code === undefined ? {} : { code }), message, body, headers: { ...headers } })
}

/** A cut answer: what an HTTP caller would see as a dropped connection. */
const cutError = (status: number, headers: Readonly<Record<string, string>>): GatewayRequestError =>
  new GatewayRequestError({ status, message: "the answer was cut before it was complete", body: undefined, headers: { ...headers } })

const isSuccess = (status: number): boolean => status >= 200 && status < 300

/** A whole answer: status, headers and the body (parsed JSON, or its text). */
export interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/** The whole answer, its body parsed (JSON, else its text); a cut answer fails. */
export const readAnswer = (response: LocalResponse): Effect.Effect<Answer, GatewayRequestError> =>
  Effect.mapBoth(readLocal(response), {
    onFailure: () => cutError(response.status, response.headers),
    onSuccess: (whole) => ({ status: whole.status, headers: whole.headers, body: parseJson(whole.body) })
  })

const failWith = (answer: Answer) => Effect.fail(requestError(answer.status, answer.headers, answer.body))

const jsonRequest = (path: string, body: object, options: RequestOptions | undefined, stream: boolean): LocalRequest => ({
  method: "POST",
  path,
  headers: { "content-type": "application/json", ...options?.headers },
  body: JSON.stringify(stream ? { ...body, stream: true } : body)
})

/** Whether an event ends the stream (`[DONE]`), or is an error the stream reports in-band. */
type Terminal = (event: StreamEvent) => "done" | "error" | undefined

const openAiTerminal: Terminal = (event) =>
  event.data === "[DONE]" ? "done" : isObject(event.data) && isObject(event.data.error) ? "error" : undefined
const typedTerminal: Terminal = (event) =>
  event.event === "error" || (isObject(event.data) && event.data.type === "error") ? "error" : undefined

export class Gateway extends Context.Service<Gateway, GatewayShape>()("gateway/library/Gateway") {
  /** The gateway over its services (see `gatewayLayer` for building them from a configuration). */
  static readonly layer = Layer.effect(
    Gateway,
    Effect.gen(function*() {
      const router = yield* makeRouter
      const log = yield* Log
      const telemetry = yield* Telemetry
      const request = (local: LocalRequest) =>
        Effect.provideContext(runLocal(router, log, local, telemetry), telemetry.requestContext)

      const json = <A>(path: string) => (body: object, options?: RequestOptions): Effect.Effect<A, GatewayRequestError> =>
        Effect.flatMap(
          Effect.flatMap(request(jsonRequest(path, body, options, false)), readAnswer),
          (answer) => isSuccess(answer.status) ? Effect.succeed(answer.body as A) : failWith(answer)
        )

      const events = (path: string, terminal: Terminal) => (body: object, options?: RequestOptions): Stream.Stream<StreamEvent, GatewayRequestError> =>
        Stream.unwrap(Effect.flatMap(request(jsonRequest(path, body, options, true)), (response) => {
          if (!isSuccess(response.status)) return Effect.flatMap(readAnswer(response), failWith)
          const parser = new SseParser()
          let ended = false
          return Effect.succeed(response.body.pipe(
            Stream.mapError(() => cutError(response.status, response.headers)),
            Stream.mapEffect((chunk) => {
              const out: Array<StreamEvent> = []
              for (const sse of parser.push(chunk)) {
                if (ended) continue
                const event: StreamEvent = { ...(sse.event === undefined ? {} : { event: sse.event }), data: sse.data === "[DONE]" ? "[DONE]" : parseText(sse.data) }
                const kind = terminal(event)
                if (kind === "error") return Effect.fail(requestError(response.status, response.headers, event.data))
                if (kind === "done") {
                  ended = true
                  continue
                }
                out.push(event)
              }
              return Effect.succeed(out)
            }),
            Stream.flattenIterable
          ))
        }))

      const chatEvents = (body: object, options?: RequestOptions): Stream.Stream<ChatStreamEvent, GatewayRequestError> =>
        Stream.unwrap(Effect.flatMap(request(jsonRequest("/v1/chat/completions", body, options, true)), (response) => {
          if (!isSuccess(response.status)) return Effect.flatMap(readAnswer(response), failWith)
          // An answer without canonical events (a provider that is not a chat provider) has none to give.
          if (response.events === undefined) return Effect.fail(requestError(response.status, response.headers, "the answer has no chat events"))
          return Effect.succeed(response.events.pipe(
            Stream.mapError(() => cutError(response.status, response.headers)),
            Stream.mapEffect((event) =>
              // As on the other streams: status 200 (the head went out), the error as the stream reported it.
              event.type === "error" ? Effect.fail(requestError(response.status, response.headers, { error: event.error })) : Effect.succeed(event)
            )
          ))
        }))

      return Gateway.of({
        request,
        chat: json<ChatCompletion>("/v1/chat/completions"),
        chatStream: events("/v1/chat/completions", openAiTerminal),
        chatEvents,
        messages: json<AnthropicMessage>("/v1/messages"),
        messagesStream: events("/v1/messages", typedTerminal),
        responses: json<ResponsesResponse>("/v1/responses"),
        responsesStream: events("/v1/responses", typedTerminal),
        embeddings: json<EmbeddingsResponse>("/v1/embeddings")
      })
    })
  )
}
