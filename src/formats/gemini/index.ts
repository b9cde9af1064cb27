/**
 * Gemini `generateContent` / `streamGenerateContent` ⇄ canonical chat model
 * (a provider-only family: no caller speaks it, so there is no request decoder
 * or response encoder).
 */
export { decodeGeminiCountTokens, decodeGeminiEmbeddings, encodeGeminiCountTokens, encodeGeminiEmbeddings } from "./endpoints.ts"
export { splitToolCallId, statusOfGoogleError, stopReasonOfFinish, toolCallIdOf, usageOf } from "./mapping.ts"
export { encodeGeminiRequest } from "./request-encode.ts"
export { decodeGeminiResponse } from "./response.ts"
export { geminiSchema } from "./schema.ts"
export { makeGeminiStreamDecoder } from "./stream-decode.ts"
