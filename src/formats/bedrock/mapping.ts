/**
 * Bedrock Converse vocabulary shared by the request, response and stream
 * translators: `stopReason` → `StopReason`, `usage` → `Usage`, the tool that
 * carries structured output, and the media formats Converse names.
 *
 * - Converse's `inputTokens` leaves out cached input (as Anthropic's does); the
 *   canonical `inputTokens` counts it, so cache reads and writes are added.
 * - Converse has no JSON output mode: a JSON `response_format` becomes a tool
 *   of this name, forced, whose input is the answer. Decoders turn its call
 *   back into text (the JSON) with an `end_turn` finish.
 */
import type { StopReason, Usage } from "../../domain/chat.ts"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The forced tool whose input is a structured answer. */
export const JSON_TOOL = "gw_json_response"

/** Converse `stopReason`s that are not `end_turn`; any other (and none) is `end_turn`. */
const STOP_REASONS: Readonly<Record<string, StopReason>> = {
  max_tokens: "max_tokens",
  model_context_window_exceeded: "max_tokens",
  stop_sequence: "stop_sequence",
  tool_use: "tool_use",
  guardrail_intervened: "content_filter",
  content_filtered: "content_filter"
}

export const stopReasonOfWire = (reason: unknown): StopReason =>
  typeof reason === "string" && Object.hasOwn(STOP_REASONS, reason) ? STOP_REASONS[reason] : "end_turn"

const count = (value: unknown): number | undefined => (typeof value === "number" ? value : undefined)

/** Converse `usage` → canonical; undefined when absent. */
export const usageOf = (raw: unknown): Usage | undefined => {
  if (!isRecord(raw)) return undefined
  const cacheRead = count(raw.cacheReadInputTokens)
  const cacheWrite = count(raw.cacheWriteInputTokens)
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: (count(raw.inputTokens) ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0),
    outputTokens: count(raw.outputTokens) ?? 0
  }
  if (cacheRead !== undefined) usage.cacheReadTokens = cacheRead
  if (cacheWrite !== undefined) usage.cacheWriteTokens = cacheWrite
  return usage
}

/** Converse's image `format` for a media type (`image/png` → `png`), undefined for one it does not take. */
export const imageFormatOf = (mediaType: string): string | undefined => {
  const format = mediaType.toLowerCase().replace(/^image\//, "")
  if (format === "jpg") return "jpeg"
  return ["png", "jpeg", "gif", "webp"].includes(format) ? format : undefined
}

/** Converse's document `format` for a media type, undefined for one it does not take. */
export const documentFormatOf = (mediaType: string): string | undefined => {
  const formats: Readonly<Record<string, string>> = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "text/plain": "txt",
    "text/html": "html",
    "text/markdown": "md",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx"
  }
  const key = mediaType.toLowerCase()
  return Object.hasOwn(formats, key) ? formats[key] : undefined
}
