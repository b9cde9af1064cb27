/**
 * The two batch file formats, detected per line:
 *
 * - OpenAI Batch API: `{"custom_id", "method": "POST", "url", "body"}` in,
 *   `{"id", "custom_id", "response": {"status_code", "request_id", "body"},
 *   "error"}` out. `url` is `/v1/chat/completions`, `/v1/embeddings` or
 *   `/v1/responses`. An answer the gateway gave (2xx or not) is a `response`;
 *   `error` (`{code, message}`) is for a request that got no answer.
 * - Anthropic Message Batches: `{"custom_id", "params"}` in (a
 *   `/v1/messages` body), `{"custom_id", "result": {"type": "succeeded",
 *   "message"} | {"type": "errored", "error": <the error body>}}` out.
 *
 * Streaming is not a batch's business: `stream: true` is refused per line.
 */
import { randomBytes } from "node:crypto"
import type { JsonObject, LocalRequest } from "../index.ts"
import type { Answer } from "../library/Gateway.ts"

const OPENAI_URLS = new Set(["/v1/chat/completions", "/v1/embeddings", "/v1/responses"])

export type BatchItem =
  | { readonly format: "openai"; readonly customId: string; readonly url: string; readonly body: JsonObject }
  | { readonly format: "anthropic"; readonly customId: string; readonly params: JsonObject }

/** A line that cannot run: why, and (when it had one) its custom_id and format, for an error line in the output. */
export interface BadLine {
  readonly bad: string
  readonly customId?: string | undefined
  readonly format?: "openai" | "anthropic" | undefined
}

const isObject = (value: unknown): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value)

/** Reads one input line. */
export const parseLine = (text: string): BatchItem | BadLine => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { bad: "not JSON" }
  }
  if (!isObject(value)) return { bad: "not a JSON object" }
  const customId = value.custom_id
  const format = "params" in value ? "anthropic" : "url" in value || "body" in value ? "openai" : undefined
  if (typeof customId !== "string" || customId === "") return { bad: "missing custom_id (a non-empty string)", format }
  if (format === "anthropic") {
    if (!isObject(value.params)) return { bad: "params must be a JSON object (the body of POST /v1/messages)", customId, format }
    if (value.params.stream === true) return { bad: "params.stream: streaming is not available in a batch", customId, format }
    return { format, customId, params: value.params }
  }
  if (format === "openai") {
    if (value.method !== undefined && value.method !== "POST") return { bad: `method must be POST, got ${JSON.stringify(value.method)}`, customId, format }
    if (typeof value.url !== "string" || !OPENAI_URLS.has(value.url)) {
      return { bad: `unknown url ${JSON.stringify(value.url)}: expected one of ${[...OPENAI_URLS].join(", ")}`, customId, format }
    }
    if (!isObject(value.body)) return { bad: "body must be a JSON object", customId, format }
    if (value.body.stream === true) return { bad: "body.stream: streaming is not available in a batch", customId, format }
    return { format, customId, url: value.url, body: value.body }
  }
  return { bad: "neither format: an OpenAI line has url and body, an Anthropic line has params", customId }
}

/** The request a line makes, with the job's own headers (project, environment). */
export const requestOf = (item: BatchItem, headers: Readonly<Record<string, string>>): LocalRequest =>
  item.format === "openai"
    ? { method: "POST", path: item.url, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(item.body) }
    : {
      method: "POST",
      path: "/v1/messages",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
      body: JSON.stringify(item.params)
    }

const batchRequestId = () => `batch_req_${randomBytes(12).toString("hex")}`

/** The output line of an answered request. */
export const answerLine = (item: BatchItem, answer: Answer): string => {
  if (item.format === "openai") {
    return JSON.stringify({
      id: batchRequestId(),
      custom_id: item.customId,
      response: { status_code: answer.status, request_id: answer.headers["x-request-id"] ?? null, body: answer.body },
      error: null
    })
  }
  const ok = answer.status >= 200 && answer.status < 300
  return JSON.stringify({
    custom_id: item.customId,
    result: ok
      ? { type: "succeeded", message: answer.body }
      : { type: "errored", error: isObject(answer.body) ? answer.body : { type: "error", error: { type: "api_error", message: String(answer.body) } } }
  })
}

/** The output line of a request that got no answer (a bad line with a custom_id, a cut response). */
export const errorLine = (customId: string, format: "openai" | "anthropic", code: string, message: string): string =>
  format === "openai"
    ? JSON.stringify({ id: batchRequestId(), custom_id: customId, response: null, error: { code, message } })
    : JSON.stringify({
      custom_id: customId,
      result: { type: "errored", error: { type: "error", error: { type: code === "invalid_request" ? "invalid_request_error" : "api_error", message } } }
    })

/** Tokens an answer reports (any of the formats' usage shapes). */
export const tokensOf = (body: unknown): { readonly input: number; readonly output: number } => {
  const usage = isObject(body) && isObject(body.usage) ? body.usage : undefined
  const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0)
  return {
    input: count(usage?.prompt_tokens ?? usage?.input_tokens),
    output: count(usage?.completion_tokens ?? usage?.output_tokens)
  }
}

/** How a failed answer is classified in the summary: `x-gw-error-code`, else the body's code, else the status. */
export const classificationOf = (answer: Answer): string => {
  const header = answer.headers["x-gw-error-code"]
  if (header !== undefined) return header
  const error = isObject(answer.body) && isObject(answer.body.error) ? answer.body.error : undefined
  if (typeof error?.code === "string") return error.code
  if (typeof error?.type === "string") return error.type
  return `status_${answer.status}`
}
