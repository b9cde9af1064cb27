/**
 * The chat codecs behind two small interfaces, so the pipeline picks "decode
 * with the caller's format, encode with the provider's" by lookup instead of
 * branching:
 * - a caller codec reads requests and writes responses and streams in the
 *   format a client speaks (Chat Completions, Messages, Responses);
 * - a provider codec writes requests and reads responses and streams in the
 *   wire family a provider speaks (Chat Completions, Messages, Gemini's
 *   `generateContent`, Bedrock's Converse).
 */
import type { Result } from "effect"
import type { ChatRequest, ChatResponse } from "../domain/chat.ts"
import type { CallerFormat, ProviderWire } from "../domain/sdk.ts"
import {
  decodeAnthropicRequest,
  decodeAnthropicResponse,
  encodeAnthropicRequest,
  encodeAnthropicResponse,
  makeAnthropicStreamDecoder,
  makeAnthropicStreamEncoder
} from "./anthropic/index.ts"
import type { DecodeFailure, EncodedRequest, RequestEncodeOptions, StreamDecoder, StreamEncoder } from "./contract.ts"
import { decodeBedrockResponse, encodeBedrockRequest, makeBedrockStreamDecoder } from "./bedrock/index.ts"
import { decodeGeminiResponse, encodeGeminiRequest, makeGeminiStreamDecoder } from "./gemini/index.ts"
import {
  decodeOpenAiChatRequest,
  decodeOpenAiChatResponse,
  encodeOpenAiChatRequest,
  encodeOpenAiChatResponse,
  makeOpenAiChatStreamDecoder,
  makeOpenAiChatStreamEncoder
} from "./openai-chat/index.ts"
import { encodeResponsesResponse, makeResponsesStreamEncoder, decodeResponsesRequest } from "./openai-responses/index.ts"

export type { CallerFormat }

export interface CallerCodec {
  readonly decodeRequest: (body: unknown) => Result.Result<ChatRequest, DecodeFailure>
  readonly encodeResponse: (response: ChatResponse, request: ChatRequest) => Record<string, unknown>
  readonly streamEncoder: (request: ChatRequest) => StreamEncoder
}

export interface ProviderCodec {
  readonly family: ProviderWire
  readonly encodeRequest: (request: ChatRequest, options: RequestEncodeOptions) => EncodedRequest
  readonly decodeResponse: (json: unknown) => Result.Result<ChatResponse, DecodeFailure>
  readonly streamDecoder: () => StreamDecoder
  /** How the stream's bytes are cut into events: SSE unless said otherwise (Bedrock's binary event stream). */
  readonly framing?: "aws-eventstream" | undefined
}

export const CALLER_CODECS: Readonly<Record<CallerFormat, CallerCodec>> = {
  openai: {
    decodeRequest: decodeOpenAiChatRequest,
    encodeResponse: (response) => encodeOpenAiChatResponse(response),
    streamEncoder: (request) => makeOpenAiChatStreamEncoder({ includeUsage: request.includeUsage })
  },
  anthropic: {
    decodeRequest: decodeAnthropicRequest,
    encodeResponse: (response) => encodeAnthropicResponse(response),
    streamEncoder: () => makeAnthropicStreamEncoder()
  },
  responses: {
    decodeRequest: decodeResponsesRequest,
    encodeResponse: (response, request) => encodeResponsesResponse(response, { model: request.model, request }),
    streamEncoder: (request) => makeResponsesStreamEncoder({ model: request.model, request })
  }
}

export const PROVIDER_CODECS: Readonly<Record<ProviderWire, ProviderCodec>> = {
  openai: {
    family: "openai",
    encodeRequest: encodeOpenAiChatRequest,
    decodeResponse: (json) => decodeOpenAiChatResponse(json),
    streamDecoder: makeOpenAiChatStreamDecoder
  },
  anthropic: {
    family: "anthropic",
    encodeRequest: encodeAnthropicRequest,
    decodeResponse: (json) => decodeAnthropicResponse(json),
    streamDecoder: () => makeAnthropicStreamDecoder()
  },
  gemini: {
    family: "gemini",
    encodeRequest: encodeGeminiRequest,
    decodeResponse: decodeGeminiResponse,
    streamDecoder: makeGeminiStreamDecoder
  },
  bedrock: {
    family: "bedrock",
    encodeRequest: encodeBedrockRequest,
    decodeResponse: decodeBedrockResponse,
    streamDecoder: makeBedrockStreamDecoder,
    framing: "aws-eventstream"
  }
}
