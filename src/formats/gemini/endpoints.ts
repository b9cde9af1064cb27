/**
 * Gemini's answers to the JSON endpoints besides chat, from and to the
 * formats callers speak there:
 *
 * - `/v1/embeddings` (OpenAI) ⇄ `batchEmbedContents`: each input string is one
 *   request (`model: models/{model}`, `content.parts[0].text`), `dimensions` →
 *   `outputDimensionality`; the answer is OpenAI's `list` of `embedding`s in
 *   input order, as base64 of little-endian float32 when `encoding_format` is
 *   `base64`. Token-array inputs have no Gemini equivalent: a 400 naming
 *   `input`. Gemini reports no token usage for embeddings: `usage` is zeros.
 * - `/v1/messages/count_tokens` (Anthropic) ⇄ `countTokens`: the request,
 *   decoded to canonical form by the caller's family, is encoded as a chat
 *   request would be (`generateContentRequest`), and `totalTokens` answered as
 *   `input_tokens`.
 */
import { Result } from "effect"
import type { ChatRequest } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { isRecord } from "./mapping.ts"
import { encodeGeminiRequest } from "./request-encode.ts"

type Body = Readonly<Record<string, unknown>>

export const encodeGeminiEmbeddings = (json: Body, model: string): Result.Result<Record<string, unknown>, DecodeFailure> => {
  const inputs = typeof json.input === "string" ? [json.input] : json.input
  if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((item) => typeof item === "string")) {
    return Result.fail({ message: "input: Gemini embeds text only: a string or an array of strings", param: "input" })
  }
  const dimensions = typeof json.dimensions === "number" ? json.dimensions : undefined
  return Result.succeed({
    requests: inputs.map((text) => ({
      model: `models/${model}`,
      content: { parts: [{ text }] },
      ...(dimensions === undefined ? {} : { outputDimensionality: dimensions })
    }))
  })
}

export const decodeGeminiEmbeddings = (json: unknown, request: Body): Result.Result<Record<string, unknown>, DecodeFailure> => {
  if (!isRecord(json) || !Array.isArray(json.embeddings)) return Result.fail({ message: "upstream response has no embeddings" })
  const base64 = request.encoding_format === "base64"
  const data: Array<Record<string, unknown>> = []
  for (const [index, item] of json.embeddings.entries()) {
    const values = isRecord(item) && Array.isArray(item.values) ? item.values : undefined
    if (values === undefined || !values.every((value) => typeof value === "number")) {
      return Result.fail({ message: `upstream embedding ${index} has no values` })
    }
    data.push({ object: "embedding", index, embedding: base64 ? float32Base64(values) : values })
  }
  return Result.succeed({ object: "list", data, model: request.model, usage: { prompt_tokens: 0, total_tokens: 0 } })
}

const float32Base64 = (values: ReadonlyArray<number>): string => {
  const bytes = Buffer.alloc(values.length * 4)
  values.forEach((value, i) => bytes.writeFloatLE(value, i * 4))
  return bytes.toString("base64")
}

/** A `countTokens` body for a canonical request (decoded from the caller's count_tokens body). */
export const encodeGeminiCountTokens = (request: ChatRequest, model: string): Record<string, unknown> => {
  const { body } = encodeGeminiRequest(request, { model, callerFamily: "anthropic" })
  const { generationConfig: _generation, ...rest } = body
  return { generateContentRequest: { model: `models/${model}`, ...rest } }
}

export const decodeGeminiCountTokens = (json: unknown): Result.Result<Record<string, unknown>, DecodeFailure> =>
  isRecord(json) && typeof json.totalTokens === "number"
    ? Result.succeed({ input_tokens: json.totalTokens })
    : Result.fail({ message: "upstream response has no totalTokens" })
