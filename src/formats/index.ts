/**
 * Wire formats: one folder per wire family, each a set of pure translators
 * between its wire shapes and the canonical chat model (src/domain/chat.ts).
 *
 * A cross-family call is always "decode the caller's family, encode the
 * provider's family" and back; no family knows another. The contract every
 * family implements is in contract.ts; this barrel only re-exports.
 *
 * Conventions every family follows:
 * - `ChatRequest.unmapped` holds the caller's top-level wire fields that have
 *   no canonical home, under their wire names (`seed`, `top_k`, `thinking`…).
 *   Keys containing `[` are notes about content the canonical model could not
 *   hold (`messages[].thinking`, `messages[].input_audio`, `tools[].custom`):
 *   their value is how many were left out, they are never sent anywhere and
 *   every encoder reports them as dropped.
 * - Decoders of untrusted input return a `Result` (failing with a `DecodeFailure`) and never throw.
 * - Stream decoders turn one parsed SSE event into canonical events and never
 *   throw: malformed input becomes an `error` event, and a stream that ends
 *   without its terminal event ends with an `error` event, never a normal stop.
 */
export * as Anthropic from "./anthropic/index.ts"
export * as Bedrock from "./bedrock/index.ts"
export * as Gemini from "./gemini/index.ts"
export * as OpenAiChat from "./openai-chat/index.ts"
export * as OpenAiResponses from "./openai-responses/index.ts"

export type { ChatEventSink, DecodeFailure, EncodedRequest, RequestEncodeOptions, SinkStreamDecoder, SseEvent, StreamDecoder, StreamEncoder } from "./contract.ts"
export { CALLER_CODECS, PROVIDER_CODECS } from "./chat-codecs.ts"
export { endpointCodec } from "./endpoint-codecs.ts"
export type { EndpointCodec } from "./endpoint-codecs.ts"
export type { CallerCodec, CallerFormat, ProviderCodec } from "./chat-codecs.ts"
export { ResponseAssembler, responseEvents } from "./replay.ts"
