/**
 * The canonical chat model: the one internal shape of a chat request, response
 * and stream event. Every wire family decodes into it and encodes out of it
 * (src/formats/<family>), so a translation between two families is always
 * "decode A, encode B" and never a pairwise mapping.
 *
 * Plain readonly data, no classes: values cross fibers, caches and tests as-is.
 */

/**
 * A prompt-cache breakpoint the caller put after this part (Anthropic
 * `cache_control`). Only a family with markers of its own carries it (Bedrock's
 * `cachePoint`); the others report the caller's field as dropped.
 */
export interface CacheMarked {
  readonly cachePoint?: true | undefined
}

export interface TextPart extends CacheMarked {
  readonly type: "text"
  readonly text: string
  /**
   * The model declined to answer and this text says why (OpenAI `refusal`).
   * Families without a refusal field show it as text.
   */
  readonly refusal?: true | undefined
}

/** Inline bytes (base64) or a URL the provider fetches itself. */
export type MediaSource =
  | { readonly kind: "base64"; readonly mediaType: string; readonly data: string }
  | { readonly kind: "url"; readonly url: string }

export interface ImagePart extends CacheMarked {
  readonly type: "image"
  readonly source: MediaSource
}

/** A PDF or other document (Anthropic `document`, OpenAI `file` with `file_data`). */
export interface DocumentPart extends CacheMarked {
  readonly type: "document"
  readonly source: MediaSource
  readonly title?: string | undefined
}

/** A tool call made by the assistant. `arguments` is JSON text, as the model produced it. */
export interface ToolCallPart extends CacheMarked {
  readonly type: "tool_call"
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/** The caller's answer to a tool call; lives in a user message. */
export interface ToolResultPart extends CacheMarked {
  readonly type: "tool_result"
  readonly toolCallId: string
  readonly content: ReadonlyArray<TextPart | ImagePart>
  readonly isError?: boolean | undefined
}

/**
 * The model's visible thinking (Anthropic `thinking`, a Responses `reasoning`
 * item's summary). `signature` is the upstream's proof that it wrote the text:
 * Anthropic accepts a thinking block sent back in a later turn only with it.
 */
export interface ReasoningPart extends CacheMarked {
  readonly type: "reasoning"
  readonly text: string
  readonly signature?: string | undefined
  /**
   * Thinking the upstream encrypted instead of showing (Anthropic
   * `redacted_thinking`'s `data`): then `text` is empty and there is no
   * signature. Sent back unchanged, Anthropic decrypts it itself.
   */
  readonly redacted?: string | undefined
}

export type ContentPart = TextPart | ImagePart | DocumentPart | ToolCallPart | ToolResultPart | ReasoningPart

/**
 * Only two roles: system prompts live in `ChatRequest.system`, tool results are
 * parts of a user message (as in the Messages API).
 */
export interface Message {
  readonly role: "user" | "assistant"
  readonly content: ReadonlyArray<ContentPart>
}

export interface ToolDefinition extends CacheMarked {
  readonly name: string
  readonly description?: string | undefined
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>
  readonly strict?: boolean | undefined
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "tool"; readonly name: string }

export type ResponseFormat =
  | { readonly type: "text" }
  | { readonly type: "json_object" }
  | {
    readonly type: "json_schema"
    readonly name: string
    readonly schema: Readonly<Record<string, unknown>>
    readonly strict?: boolean | undefined
    readonly description?: string | undefined
  }

export interface ChatRequest {
  readonly model: string
  /** System and developer instructions, in order. Empty when there are none. */
  readonly system: ReadonlyArray<TextPart>
  readonly messages: ReadonlyArray<Message>
  readonly maxTokens?: number | undefined
  readonly temperature?: number | undefined
  readonly topP?: number | undefined
  readonly topK?: number | undefined
  readonly stop?: ReadonlyArray<string> | undefined
  readonly stream: boolean
  /** Whether the caller wants token usage at the end of a stream. */
  readonly includeUsage: boolean
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly parallelToolCalls?: boolean | undefined
  readonly responseFormat?: ResponseFormat | undefined
  /** End-user id (OpenAI `user`/`safety_identifier`, Anthropic `metadata.user_id`). */
  readonly user?: string | undefined
  /**
   * How hard a reasoning model should think (OpenAI `reasoning_effort`, Responses
   * `reasoning.effort`, Anthropic `output_config.effort`); Anthropic upstreams get
   * a `thinking` budget for it.
   */
  readonly reasoningEffort?: ReasoningEffort | undefined
  /**
   * Wire fields of the caller's format that have no canonical home (e.g. OpenAI
   * `seed`, `logprobs`). An encoder of the same family may pass them through;
   * any other encoder reports them as dropped.
   */
  readonly unmapped: Readonly<Record<string, unknown>>
  /**
   * Caller fields whose meaning another wire family cannot carry (server-side
   * state such as `previous_response_id`, hosted tools, stored-file references,
   * audio input): a provider of another family cannot serve this request, so
   * routing skips it, or answers 400 naming the first of them when none is left.
   * The same-family path forwards them untouched.
   */
  readonly untranslatable: ReadonlyArray<string>
  /**
   * Set when the gateway keeps the answer as Responses API state (`[responses]`
   * on, `store` not false): the Response object says `store: true` and names
   * the `previous_response_id` the caller sent (the provider was sent the
   * whole conversation instead).
   */
  readonly stored?: { readonly previousResponseId: string | null } | undefined
}

export const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"] as const

export type ReasoningEffort = typeof REASONING_EFFORTS[number]

/**
 * Why generation stopped. A superset of both families; each encoder maps it to
 * its own vocabulary (docs/reference/translation.md §8.3).
 */
export type StopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "content_filter"
  | "pause_turn"

/** `inputTokens` counts all input, cached included (OpenAI's convention). */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number | undefined
  readonly cacheWriteTokens?: number | undefined
  readonly reasoningTokens?: number | undefined
}

export interface ChatResponse {
  readonly id: string
  readonly model: string
  /** Unix seconds. */
  readonly created: number
  readonly content: ReadonlyArray<TextPart | ToolCallPart | ReasoningPart>
  readonly stopReason: StopReason
  readonly stopSequence?: string | undefined
  readonly usage: Usage
}

/** An error the upstream reported inside a stream (after the 200 head). */
export interface StreamError {
  /** The upstream's own error type (`overloaded_error`, `server_error`, …). */
  readonly type: string
  readonly message: string
  /** HTTP-like status the error corresponds to, when known. */
  readonly status?: number | undefined
  /** The upstream's own error code (`content_policy_violation`, …), when it sent one. */
  readonly code?: string | undefined
  /**
   * The gateway found the stream broken (an event that does not parse, an end
   * before the terminal event), rather than the upstream reporting an error.
   */
  readonly malformed?: boolean | undefined
}

/**
 * One event of a chat stream, in order: `message_start`, then any mix of text
 * and tool-call deltas, then `message_delta` (the finish) and `usage` (either
 * order), then `message_stop`. `error` ends a stream without `message_stop`.
 * Tool-call `index` is the position among tool calls (0, 1, …), not a block index.
 */
export type ChatStreamEvent =
  | {
    readonly type: "message_start"
    readonly id: string
    readonly model: string
    readonly created: number
    /** Input usage when the upstream knows it up front (Anthropic). */
    readonly usage?: Usage | undefined
  }
  | { readonly type: "text_delta"; readonly text: string; readonly refusal?: true | undefined }
  /**
   * Thinking text (see `ReasoningPart`). A reasoning part runs until its
   * `reasoning_signature` or other content; a delta after either starts the next.
   */
  | { readonly type: "reasoning_delta"; readonly text: string }
  | { readonly type: "reasoning_signature"; readonly signature: string }
  /** A whole reasoning part of redacted thinking (see `ReasoningPart.redacted`). */
  | { readonly type: "reasoning_redacted"; readonly data: string }
  /**
   * Output the canonical model does not carry (a server tool's block):
   * encoders of other families write nothing for it, but it is content, so it
   * commits the response (see `commitsResponse`).
   */
  | { readonly type: "other_content"; readonly kind: string }
  | { readonly type: "tool_call_start"; readonly index: number; readonly id: string; readonly name: string }
  | { readonly type: "tool_call_delta"; readonly index: number; readonly argumentsDelta: string }
  | { readonly type: "message_delta"; readonly stopReason: StopReason; readonly stopSequence?: string | undefined }
  | { readonly type: "usage"; readonly usage: Usage }
  | { readonly type: "message_stop" }
  | { readonly type: "error"; readonly error: StreamError }

/**
 * The commit point of a streamed answer, one rule for every path: the response
 * head goes to the caller with the first event that carries content or the
 * finish. The opening (`message_start`, a role-only chunk, early usage) commits
 * nothing, so an upstream that opens a stream and then fails before any content
 * is still a failed attempt that routing can retry or fail over.
 */
export const commitsResponse = (event: ChatStreamEvent): boolean =>
  event.type !== "message_start" && event.type !== "usage" && event.type !== "error"
