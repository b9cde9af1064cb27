/**
 * Chat Completions vocabulary shared by the response and stream translators:
 * `finish_reason` ⇄ `StopReason` (docs/reference/translation.md §8.3) and `usage` ⇄ `Usage`
 * (§8.4). OpenAI counts cached tokens inside `prompt_tokens`, as the canonical
 * `Usage` does, so input passes through unchanged.
 */
import type { ChatStreamEvent, StopReason, Usage } from "../../domain/chat.ts"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const numberOr = (value: unknown): number | undefined => (typeof value === "number" ? value : undefined)

/** The `message_start` of an OpenAI stream (Chat Completions or Responses) from its own id, model and creation time; now when it sent none. */
export const messageStartOf = (id: unknown, model: unknown, created: unknown): ChatStreamEvent => ({
  type: "message_start",
  id: typeof id === "string" ? id : "",
  model: typeof model === "string" ? model : "",
  created: typeof created === "number" ? created : Math.floor(Date.now() / 1000)
})

/**
 * `finish_reason` → canonical. Some compatible servers answer a tool call with
 * `stop`; that is reported as `tool_use`, or an Anthropic caller would not run
 * the tools.
 */
export const stopReasonOfFinish = (finish: unknown, hasToolCalls: boolean): StopReason => {
  switch (finish) {
    case "length":
      return "max_tokens"
    case "tool_calls":
    case "function_call":
      return "tool_use"
    case "content_filter":
      return "content_filter"
    default:
      return hasToolCalls ? "tool_use" : "end_turn"
  }
}

export const finishReasonOf = (reason: StopReason): string => {
  switch (reason) {
    case "max_tokens":
      return "length"
    case "tool_use":
      return "tool_calls"
    case "content_filter":
      return "content_filter"
    case "end_turn":
    case "stop_sequence":
    case "pause_turn":
      return "stop"
  }
}

/** Wire `usage` → canonical; undefined when absent or not an object. */
export const decodeUsage = (raw: unknown): Usage | undefined => {
  if (!isRecord(raw)) return undefined
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: numberOr(raw.prompt_tokens) ?? 0,
    outputTokens: numberOr(raw.completion_tokens) ?? 0
  }
  if (isRecord(raw.prompt_tokens_details)) {
    const cached = numberOr(raw.prompt_tokens_details.cached_tokens)
    const written = numberOr(raw.prompt_tokens_details.cache_write_tokens)
    if (cached !== undefined) usage.cacheReadTokens = cached
    if (written !== undefined) usage.cacheWriteTokens = written
  }
  if (isRecord(raw.completion_tokens_details)) {
    const reasoning = numberOr(raw.completion_tokens_details.reasoning_tokens)
    if (reasoning !== undefined) usage.reasoningTokens = reasoning
  }
  return usage
}

/** Canonical → wire `usage`; `cached_tokens` is always present (0 when unknown). */
export const encodeUsage = (usage: Usage): Record<string, unknown> => {
  const promptDetails: Record<string, number> = { cached_tokens: usage.cacheReadTokens ?? 0 }
  if (usage.cacheWriteTokens !== undefined && usage.cacheWriteTokens > 0) {
    promptDetails.cache_write_tokens = usage.cacheWriteTokens
  }
  const wire: Record<string, unknown> = {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: promptDetails
  }
  if (usage.reasoningTokens !== undefined) wire.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens }
  return wire
}

/** An id in OpenAI's `chatcmpl-` form: an Anthropic `msg_…` id becomes `chatcmpl-msg_…`. */
export const completionId = (id: string): string => (id.startsWith("chatcmpl-") ? id : `chatcmpl-${id}`)
