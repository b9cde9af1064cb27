/**
 * The chat codec of each wire family behind one interface, so the pipeline
 * picks "decode with the caller's family, encode with the provider's" by
 * lookup instead of branching on families.
 */
import type { ChatRequest, ChatResponse } from "../domain/chat.ts"
import type { WireFamily } from "../domain/sdk.ts"
import {
  decodeAnthropicRequest,
  decodeAnthropicResponse,
  encodeAnthropicRequest,
  encodeAnthropicResponse,
  makeAnthropicStreamDecoder,
  makeAnthropicStreamEncoder
} from "./anthropic/index.ts"
import type { DecodeResult, EncodedRequest, RequestEncodeOptions, StreamDecoder, StreamEncoder } from "./index.ts"
import {
  decodeOpenAiChatRequest,
  decodeOpenAiChatResponse,
  encodeOpenAiChatRequest,
  encodeOpenAiChatResponse,
  makeOpenAiChatStreamDecoder,
  makeOpenAiChatStreamEncoder
} from "./openai-chat/index.ts"

export interface ChatCodec {
  readonly family: WireFamily
  readonly decodeRequest: (body: unknown) => DecodeResult<ChatRequest>
  readonly encodeRequest: (request: ChatRequest, options: RequestEncodeOptions) => EncodedRequest
  readonly decodeResponse: (json: unknown) => DecodeResult<ChatResponse>
  /** `model`: the name to show the caller (what it asked for). */
  readonly encodeResponse: (response: ChatResponse, model?: string) => Record<string, unknown>
  readonly streamDecoder: () => StreamDecoder
  readonly streamEncoder: (options: { readonly includeUsage: boolean; readonly model?: string | undefined }) => StreamEncoder
}

export const CHAT_CODECS: Readonly<Record<WireFamily, ChatCodec>> = {
  openai: {
    family: "openai",
    decodeRequest: decodeOpenAiChatRequest,
    encodeRequest: encodeOpenAiChatRequest,
    decodeResponse: (json) => decodeOpenAiChatResponse(json),
    encodeResponse: (response, model) => encodeOpenAiChatResponse(response, { model }),
    streamDecoder: makeOpenAiChatStreamDecoder,
    streamEncoder: (options) => makeOpenAiChatStreamEncoder(options)
  },
  anthropic: {
    family: "anthropic",
    decodeRequest: decodeAnthropicRequest,
    encodeRequest: encodeAnthropicRequest,
    decodeResponse: (json) => decodeAnthropicResponse(json),
    encodeResponse: (response, model) => encodeAnthropicResponse(response, { model }),
    streamDecoder: () => makeAnthropicStreamDecoder(),
    streamEncoder: (options) => makeAnthropicStreamEncoder({ model: options.model })
  }
}
