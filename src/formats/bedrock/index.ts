/**
 * Amazon Bedrock Converse / ConverseStream ⇄ canonical chat model (a
 * provider-only family; its stream is Amazon's binary event stream, read by the
 * `aws-eventstream` framer of src/providers).
 */
export { JSON_TOOL, stopReasonOfWire, usageOf } from "./mapping.ts"
export { encodeBedrockRequest } from "./request-encode.ts"
export { decodeBedrockResponse } from "./response.ts"
export { makeBedrockStreamDecoder } from "./stream-decode.ts"
