/**
 * Anthropic Messages (`/v1/messages`) ⇄ canonical chat model.
 */
export { statusOfAnthropicError } from "./error.ts"
export { cleanToolId, messageId, stopReasonOfWire, wireStopReason } from "./mapping.ts"
export { decodeAnthropicRequest } from "./request-decode.ts"
export { DEFAULT_MAX_TOKENS, encodeAnthropicRequest, unsupportedResponseFormat } from "./request-encode.ts"
export {
  decodeAnthropicResponse,
  encodeAnthropicResponse,
  type ResponseDecodeOptions,
  type ResponseEncodeOptions
} from "./response.ts"
export { type AnthropicStreamDecodeOptions, makeAnthropicStreamDecoder } from "./stream-decode.ts"
export { type AnthropicStreamEncodeOptions, makeAnthropicStreamEncoder } from "./stream-encode.ts"
