/**
 * The request and answer shapes of the library's typed helpers: the fields
 * the gateway reads, typed, and every other field of each wire format passed
 * through as it is (see docs/endpoints.md for what each endpoint accepts).
 */

export type JsonObject = { readonly [key: string]: unknown }

/** A message of the Chat Completions format. */
export interface ChatMessage {
  readonly role: "system" | "developer" | "user" | "assistant" | "tool"
  readonly content: string | ReadonlyArray<JsonObject> | null
  readonly [key: string]: unknown
}

/** `POST /v1/chat/completions` (OpenAI). `stream` is set by the stream helper. */
export interface ChatCompletionRequest {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly [key: string]: unknown
}

export interface ChatCompletion extends JsonObject {
  readonly id: string
  readonly object: "chat.completion"
  readonly model: string
  readonly choices: ReadonlyArray<{
    readonly index: number
    readonly message: { readonly role: "assistant"; readonly content: string | null; readonly [key: string]: unknown }
    readonly finish_reason: string | null
  }>
  readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number; readonly total_tokens: number }
}

/** `POST /v1/messages` (Anthropic). */
export interface AnthropicMessageRequest {
  readonly model: string
  readonly max_tokens: number
  readonly messages: ReadonlyArray<{ readonly role: "user" | "assistant"; readonly content: string | ReadonlyArray<JsonObject> }>
  readonly [key: string]: unknown
}

export interface AnthropicMessage extends JsonObject {
  readonly id: string
  readonly type: "message"
  readonly model: string
  readonly content: ReadonlyArray<JsonObject & { readonly type: string }>
  readonly stop_reason: string | null
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number }
}

/** `POST /v1/responses` (OpenAI Responses). */
export interface ResponsesRequest {
  readonly model: string
  readonly input: string | ReadonlyArray<JsonObject>
  readonly [key: string]: unknown
}

export interface ResponsesResponse extends JsonObject {
  readonly id: string
  readonly object: "response"
  readonly model: string
  readonly output: ReadonlyArray<JsonObject>
  readonly output_text?: string
}

/** `POST /v1/embeddings`. */
export interface EmbeddingsRequest {
  readonly model: string
  readonly input: string | ReadonlyArray<string> | ReadonlyArray<number> | ReadonlyArray<ReadonlyArray<number>>
  readonly [key: string]: unknown
}

export interface EmbeddingsResponse extends JsonObject {
  readonly object: "list"
  readonly data: ReadonlyArray<{ readonly index: number; readonly embedding: ReadonlyArray<number> | string }>
  readonly model: string
  readonly usage: { readonly prompt_tokens: number; readonly total_tokens: number }
}

/** One streamed event: its `event:` name (Anthropic, Responses) and its parsed `data` (`"[DONE]"` never reaches you). */
export interface StreamEvent {
  readonly event?: string
  readonly data: unknown
}
