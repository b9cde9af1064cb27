/**
 * The contract every wire family implements, so the pipeline can hold a
 * decoder or an encoder without knowing which family it came from (the
 * conventions are in index.ts). Families import these types from here, never
 * from the barrel.
 */
import type { ChatStreamEvent, StreamError } from "../domain/chat.ts"
import type { WireFamily } from "../domain/sdk.ts"

/**
 * Why untrusted input did not decode (the failure of a decoder's `Result`).
 * `message` names the offending field (`messages[2].content: expected string
 * or array of content parts`); `param` is that field's path alone, for
 * OpenAI's `error.param`.
 */
export interface DecodeFailure {
  readonly message: string
  readonly param?: string | undefined
  /**
   * The upstream answered 200 but said no (a safety block with nothing answered,
   * safety-block.ts): the error it reported, classified like one in a stream.
   */
  readonly reported?: StreamError | undefined
}

export interface RequestEncodeOptions {
  /** Upstream model name to put in the body. */
  readonly model: string
  /**
   * Family the request was decoded from. `unmapped` fields are passed through
   * only when it is the encoder's own family; otherwise (and when absent) they
   * are reported in `dropped`.
   */
  readonly callerFamily?: WireFamily | undefined
  /** Anthropic only: `max_tokens` when the request has none (default 4096). */
  readonly defaultMaxTokens?: number | undefined
  /**
   * Chat Completions only: the field that carries the output limit.
   * `max_completion_tokens` for OpenAI and Azure (their reasoning models refuse
   * `max_tokens`); `max_tokens` (the default) for other compatible servers.
   */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
}

export interface EncodedRequest {
  /** The upstream wire body, ready for `JSON.stringify`. */
  readonly body: Record<string, unknown>
  /** Caller wire names of request fields (or content notes) the body could not carry. */
  readonly dropped: ReadonlyArray<string>
}

/** One parsed SSE event: its `event:` name (if any) and its joined `data:` lines. */
export interface SseEvent {
  readonly event?: string | undefined
  readonly data: string
}

/** Upstream SSE events in, canonical stream events out. One instance per stream. */
export interface StreamDecoder {
  push(event: SseEvent): ReadonlyArray<ChatStreamEvent>
  /** At EOF: an `error` event if the stream never reached its terminal event. */
  end(): ReadonlyArray<ChatStreamEvent>
}

/** Where a decoder puts canonical events, in order (an array is one). */
export interface ChatEventSink {
  push(event: ChatStreamEvent): unknown
  /**
   * False once nobody reads a text delta (the fast path's gate, when the
   * answer committed, its first token was timed, and no guardrail, cache, tap
   * or splice reads text): a decoder may then check a text chunk and drop it.
   */
  readonly textRead?: boolean | undefined
}

/**
 * A stream decoder that also reads an event from its data and name straight
 * into a sink: no `SseEvent` and no array per event. The fast path's stream
 * gate reads every chunk of a forwarded stream so.
 */
export interface SinkStreamDecoder extends StreamDecoder {
  decodeInto(data: string, event: string | undefined, out: ChatEventSink): void
}

/** `StreamDecoder.push` of a sink decoder: the event's canonical events, gathered in a fresh array. */
export const pushInto = (decodeInto: SinkStreamDecoder["decodeInto"]) => (event: SseEvent): ReadonlyArray<ChatStreamEvent> => {
  const out: Array<ChatStreamEvent> = []
  decodeInto(event.data, event.event, out)
  return out
}

/** Canonical stream events in, complete SSE frames for the caller out. One instance per stream. */
export interface StreamEncoder {
  /** Zero or more complete frames (`""` when the event produces none). */
  push(event: ChatStreamEvent): string
}
