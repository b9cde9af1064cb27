/**
 * OpenAI Chat Completions (`/v1/chat/completions`) ⇄ canonical chat model.
 */
export { statusOfOpenAiError } from "./error.ts"
export { completionId, finishReasonOf, stopReasonOfFinish } from "./mapping.ts"
export { decodeOpenAiChatRequest } from "./request-decode.ts"
export { encodeOpenAiChatRequest } from "./request-encode.ts"
export {
  decodeOpenAiChatResponse,
  encodeOpenAiChatResponse,
  type ResponseDecodeOptions,
  type ResponseEncodeOptions
} from "./response.ts"
export { makeOpenAiChatStreamDecoder } from "./stream-decode.ts"
export { makeOpenAiChatStreamEncoder, type OpenAiStreamEncodeOptions } from "./stream-encode.ts"
