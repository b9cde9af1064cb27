/**
 * Responses vocabulary shared by the request, response and stream
 * translators: ids, `status` ⇐ `StopReason`, `usage` ⇐ `Usage`, a reasoning
 * item's `encrypted_content` ⇄ `ReasoningPart`, media URLs.
 */
import type { ReasoningPart, StopReason, Usage } from "../../domain/chat.ts"
import { isRecord } from "../openai-chat/mapping.ts"

/** `status` of a finished response and, when not completed, why. */
export interface Outcome {
  readonly status: "completed" | "incomplete"
  readonly incompleteReason?: "max_output_tokens" | "content_filter" | undefined
}

const COMPLETED: Outcome = { status: "completed" }

/**
 * A tool-call turn is still `completed`: Responses callers recognize tool calls
 * by their `function_call` items, not by a finish reason (docs/reference/openai-other.md §7.3).
 * So is a refusal (`refused`: the answer has a refusal part, which a Chat
 * Completions upstream reports as a `content_filter` stop): the refusal is the
 * answer, as OpenAI's Responses API gives it; `content_filter` without one is
 * output the filter cut off.
 */
export const outcomeOf = (reason: StopReason, refused: boolean): Outcome => {
  switch (reason) {
    case "max_tokens":
      return { status: "incomplete", incompleteReason: "max_output_tokens" }
    case "content_filter":
      return refused ? COMPLETED : { status: "incomplete", incompleteReason: "content_filter" }
    case "end_turn":
    case "stop_sequence":
    case "tool_use":
    case "pause_turn":
      return COMPLETED
  }
}

/** Canonical → wire `usage`; the detail objects and all their counts are always present (0 when unknown), as the schema requires. */
export const encodeUsage = (usage: Usage): Record<string, unknown> => ({
  input_tokens: usage.inputTokens,
  input_tokens_details: { cached_tokens: usage.cacheReadTokens ?? 0, cache_write_tokens: usage.cacheWriteTokens ?? 0 },
  output_tokens: usage.outputTokens,
  output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  total_tokens: usage.inputTokens + usage.outputTokens
})

/** The upstream id without its family prefix: `chatcmpl-abc`, `msg_abc` and `resp_abc` all give `abc`. */
const idBody = (id: string): string => id.replace(/^(?:chatcmpl-|msg_|resp_)/, "")

/** `resp_…` id of the response made from an upstream answer. */
export const responseId = (id: string): string => `resp_${idBody(id)}`

/**
 * Output item ids, unique within a response and the same whether it is
 * streamed or not: `msg_<id>` for a first message item, `msg_<id>_<n>`,
 * `fc_<id>_<n>` and `rs_<id>_<n>` otherwise (`n`: the item's `output_index`).
 */
export const messageItemId = (id: string, outputIndex: number): string =>
  outputIndex === 0 ? `msg_${idBody(id)}` : `msg_${idBody(id)}_${outputIndex}`

export const functionCallItemId = (id: string, outputIndex: number): string => `fc_${idBody(id)}_${outputIndex}`

export const reasoningItemId = (id: string, outputIndex: number): string => `rs_${idBody(id)}_${outputIndex}`

/**
 * Marks an `encrypted_content` holding Anthropic `redacted_thinking` data, not
 * a thinking block's signature: both are base64 (which has no `:`), and a later
 * turn must send Anthropic back the block it came from.
 */
const REDACTED_THINKING_PREFIX = "redacted_thinking:"

/** The `encrypted_content` that carries redacted thinking's `data`. */
export const redactedThinkingContent = (data: string): string => REDACTED_THINKING_PREFIX + data

/** OpenAI's encrypted reasoning is a Fernet token; these bytes begin every one (version 0x80, then a timestamp). */
const OPENAI_ENCRYPTED_PREFIX = "gAAAAA"

/** A reasoning item's `encrypted_content`: the part's signature, or its redacted data marked; null for neither. */
export const encryptedContentOf = (part: ReasoningPart): string | null =>
  part.redacted !== undefined ? redactedThinkingContent(part.redacted) : part.signature ?? null

/**
 * The reasoning part a reasoning item sent back stands for (`text`: its summary);
 * undefined without `encrypted_content` or with OpenAI's own, which only OpenAI can read.
 */
export const reasoningPartOf = (text: string, encrypted: string | null | undefined): ReasoningPart | undefined => {
  if (encrypted == null || encrypted === "" || encrypted.startsWith(OPENAI_ENCRYPTED_PREFIX)) return undefined
  if (!encrypted.startsWith(REDACTED_THINKING_PREFIX)) return { type: "reasoning", text, signature: encrypted }
  const data = encrypted.slice(REDACTED_THINKING_PREFIX.length)
  return data === "" ? undefined : { type: "reasoning", text: "", redacted: data }
}

const numberOr = (value: unknown): number | undefined => (typeof value === "number" ? value : undefined)

/** Wire `usage` → canonical; undefined when absent. */
export const decodeUsage = (raw: unknown): Usage | undefined => {
  if (!isRecord(raw)) return undefined
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: numberOr(raw.input_tokens) ?? 0,
    outputTokens: numberOr(raw.output_tokens) ?? 0
  }
  const cached = isRecord(raw.input_tokens_details) ? numberOr(raw.input_tokens_details.cached_tokens) : undefined
  const written = isRecord(raw.input_tokens_details) ? numberOr(raw.input_tokens_details.cache_write_tokens) : undefined
  const reasoning = isRecord(raw.output_tokens_details) ? numberOr(raw.output_tokens_details.reasoning_tokens) : undefined
  if (cached !== undefined) usage.cacheReadTokens = cached
  if (written !== undefined) usage.cacheWriteTokens = written
  if (reasoning !== undefined) usage.reasoningTokens = reasoning
  return usage
}

/** A finished response object's `status` (+ `incomplete_details`) as a stop reason; undefined while it is not finished. */
export const stopReasonOfResponse = (response: Record<string, unknown>, hasToolCalls: boolean): StopReason | undefined => {
  if (response.status === "completed") return hasToolCalls ? "tool_use" : "end_turn"
  if (response.status !== "incomplete") return undefined
  const reason = isRecord(response.incomplete_details) ? response.incomplete_details.reason : undefined
  return reason === "content_filter" ? "content_filter" : "max_tokens"
}
