/**
 * Gemini `generateContent` vocabulary shared by the request, response and
 * stream translators: `finishReason` → `StopReason`, `usageMetadata` → `Usage`,
 * and tool-call ids.
 *
 * - Gemini counts thinking apart from the answer (`thoughtsTokenCount` beside
 *   `candidatesTokenCount`); the canonical `outputTokens` counts both, as
 *   OpenAI's `completion_tokens` does, with the thinking also in
 *   `reasoningTokens`. `promptTokenCount` includes cached input, as the
 *   canonical `inputTokens` does.
 * - A function call has no id unless Gemini gave one, so one is made
 *   (`call_…`). Gemini 3 refuses a function call sent back without the
 *   `thoughtSignature` it came with, and callers of Chat Completions or
 *   Messages have nowhere to keep one: the signature rides in the tool call's
 *   id (`<id>__thought__<signature as base64url>`, only `[A-Za-z0-9_-]`, so
 *   Anthropic's id rule keeps it intact) and is taken back out when the call
 *   returns in a later turn.
 */
import type { StopReason, Usage } from "../../domain/chat.ts"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const SIGNATURE_MARK = "__thought__"

/** Finish reasons of a safety or policy block: the answer was filtered. */
const FILTERED = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION"
])

/** `finishReason` → canonical; a plain `STOP` after function calls is `tool_use` (Gemini has no reason of its own for it). */
export const stopReasonOfFinish = (finish: unknown, hasToolCalls: boolean): StopReason => {
  if (finish === "MAX_TOKENS") return "max_tokens"
  if (typeof finish === "string" && FILTERED.has(finish)) return "content_filter"
  return hasToolCalls ? "tool_use" : "end_turn"
}

const count = (value: unknown): number => (typeof value === "number" ? value : 0)

/** `usageMetadata` → canonical; undefined when absent. */
export const usageOf = (raw: unknown): Usage | undefined => {
  if (!isRecord(raw)) return undefined
  const thoughts = typeof raw.thoughtsTokenCount === "number" ? raw.thoughtsTokenCount : undefined
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: count(raw.promptTokenCount) + count(raw.toolUsePromptTokenCount),
    outputTokens: count(raw.candidatesTokenCount) + (thoughts ?? 0)
  }
  if (typeof raw.cachedContentTokenCount === "number") usage.cacheReadTokens = raw.cachedContentTokenCount
  if (thoughts !== undefined) usage.reasoningTokens = thoughts
  return usage
}

/** A fresh tool-call id, for a function call Gemini sent without one. */
export const newToolCallId = (): string => `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`

const toBase64Url = (base64: string): string => base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")

const fromBase64Url = (text: string): string => {
  const base64 = text.replaceAll("-", "+").replaceAll("_", "/")
  return base64 + "=".repeat((4 - (base64.length % 4)) % 4)
}

/** The id a caller sees for a function call: Gemini's id (or a new one), with its thought signature when it had one. */
export const toolCallIdOf = (id: unknown, signature: unknown): string => {
  const base = typeof id === "string" && id !== "" ? id : newToolCallId()
  return typeof signature === "string" && signature !== "" ? `${base}${SIGNATURE_MARK}${toBase64Url(signature)}` : base
}

/** A caller's tool-call id split back into Gemini's id and the thought signature it carried. */
export const splitToolCallId = (id: string): { readonly id: string; readonly signature: string | undefined } => {
  const at = id.indexOf(SIGNATURE_MARK)
  return at < 0 ? { id, signature: undefined } : { id: id.slice(0, at), signature: fromBase64Url(id.slice(at + SIGNATURE_MARK.length)) }
}

/** Status a Google error `status` stands for, when the body gave no numeric `code`. */
const STATUS_BY_NAME: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ABORTED: 409,
  ALREADY_EXISTS: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  UNKNOWN: 500,
  NOT_IMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504
}

/** The HTTP status a Google error object (`{code, message, status}`) stands for (500 when unknown). */
export const statusOfGoogleError = (error: Record<string, unknown>): number =>
  typeof error.code === "number" && error.code >= 400
    ? error.code
    : typeof error.status === "string" && Object.hasOwn(STATUS_BY_NAME, error.status) ? STATUS_BY_NAME[error.status] : 500
