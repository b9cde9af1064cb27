/**
 * Messages vocabulary shared by the request, response and stream translators:
 * `stop_reason` ⇄ `StopReason` (docs/reference/translation.md §8.3), `usage` ⇄ `Usage` (§8.4),
 * message ids and tool ids.
 *
 * Anthropic's `input_tokens` counts only uncached input; the canonical
 * `inputTokens` counts all of it (cache reads and writes included).
 */
import type { StopReason, Usage } from "../../domain/chat.ts"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const UNSAFE_TOOL_ID_CHARS = /[^a-zA-Z0-9_-]/g

/**
 * A tool id Anthropic accepts (`^[a-zA-Z0-9_-]+$`): every other character
 * becomes `_`. Deterministic, so a `tool_use.id` and the `tool_use_id` that
 * answers it stay equal.
 */
export const cleanToolId = (id: string): string => (id === "" ? "_" : id.replace(UNSAFE_TOOL_ID_CHARS, "_"))

/** Tool-call arguments as a `tool_use.input` object (`input` must be an object). */
export { toolInput } from "../tool-input.ts"

/** An id in Anthropic's `msg_` form: `chatcmpl-…` becomes `msg_chatcmpl-…`. */
export const messageId = (id: string): string => (id.startsWith("msg_") ? id : `msg_${id}`)

export const stopReasonOfWire = (reason: unknown): StopReason => {
  switch (reason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens"
    case "stop_sequence":
    case "tool_use":
    case "pause_turn":
      return reason
    case "refusal":
      return "content_filter"
    default:
      return "end_turn"
  }
}

export const wireStopReason = (reason: StopReason): string => (reason === "content_filter" ? "refusal" : reason)

/** Usage counts as Anthropic reports them, before they are added up. */
export interface UsageCounts {
  readonly input: number
  readonly output: number
  readonly cacheWrite?: number | undefined
  readonly cacheRead?: number | undefined
  readonly thinking?: number | undefined
}

const numberOr = (value: unknown, fallback: number | undefined): number | undefined =>
  typeof value === "number" ? value : fallback

/**
 * Reads a wire `usage` over earlier counts: every non-null field replaces the
 * earlier value (what the SDK does with `message_delta` usage).
 */
export const readUsageCounts = (raw: unknown, earlier?: UsageCounts): UsageCounts | undefined => {
  if (!isRecord(raw)) return earlier
  const details = isRecord(raw.output_tokens_details) ? raw.output_tokens_details : undefined
  return {
    input: numberOr(raw.input_tokens, earlier?.input) ?? 0,
    output: numberOr(raw.output_tokens, earlier?.output) ?? 0,
    cacheWrite: numberOr(raw.cache_creation_input_tokens, earlier?.cacheWrite),
    cacheRead: numberOr(raw.cache_read_input_tokens, earlier?.cacheRead),
    thinking: numberOr(details?.thinking_tokens, earlier?.thinking)
  }
}

export const usageOfCounts = (counts: UsageCounts): Usage => {
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: counts.input + (counts.cacheWrite ?? 0) + (counts.cacheRead ?? 0),
    outputTokens: counts.output
  }
  if (counts.cacheRead !== undefined) usage.cacheReadTokens = counts.cacheRead
  if (counts.cacheWrite !== undefined) usage.cacheWriteTokens = counts.cacheWrite
  if (counts.thinking !== undefined) usage.reasoningTokens = counts.thinking
  return usage
}

/** Canonical → wire `usage`; cache fields only when known. */
export const encodeUsage = (usage: Usage): Record<string, number> => {
  const cacheRead = usage.cacheReadTokens
  const cacheWrite = usage.cacheWriteTokens
  const wire: Record<string, number> = {
    input_tokens: Math.max(0, usage.inputTokens - (cacheRead ?? 0) - (cacheWrite ?? 0))
  }
  if (cacheWrite !== undefined) wire.cache_creation_input_tokens = cacheWrite
  if (cacheRead !== undefined) wire.cache_read_input_tokens = cacheRead
  wire.output_tokens = usage.outputTokens
  return wire
}
