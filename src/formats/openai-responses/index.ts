/**
 * OpenAI Responses (`POST /v1/responses`) as a caller-side wire format ⇄
 * canonical chat model: requests in, responses and stream events out. Any chat
 * provider can serve it through the canonical model.
 */
export { decodeResponsesRequest } from "./request-decode.ts"
export { encodeResponsesResponse, type ResponsesEncodeOptions } from "./response.ts"
export { makeResponsesStreamEncoder } from "./stream-encode.ts"
export { makeResponsesStreamDecoder } from "./stream-decode.ts"
export { decodeResponsesResponse } from "./response-decode.ts"
