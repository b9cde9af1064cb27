/**
 * The response half of a GenAI span: what the answer was (model, id, finish
 * reason, token usage) and, with content capture, the output messages. Built
 * from a summary both paths produce: the fast path's tap and the normalized
 * path's collector see the same canonical events.
 */
import type { ChatResponse, StopReason, Usage } from "../../../domain/index.ts"
import { finishReasonOf, GATEWAY_GENAI, GEN_AI } from "./attributes.ts"
import { capJson, fitsCap, outputMessagesOf, textOutputJson } from "./messages.ts"
import type { Attributes } from "./request.ts"

/** What a model call answered, as far as it got. */
export interface GenAiResponseSummary {
  readonly id?: string | undefined
  readonly model?: string | undefined
  readonly stopReason?: StopReason | undefined
  readonly usage?: Usage | undefined
  /** The answer's text (the collector keeps at most 64 KB of it). */
  readonly text?: string | undefined
  readonly toolCalls?: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }> | undefined
}

/** The summary of a complete canonical response (normalized non-streamed answers, cache hits). */
export const summaryOfResponse = (response: ChatResponse): GenAiResponseSummary => {
  let text = ""
  const toolCalls: Array<{ id: string; name: string; arguments: string }> = []
  for (const part of response.content) {
    if (part.type === "text") text += part.text
    else if (part.type === "tool_call") toolCalls.push({ id: part.id, name: part.name, arguments: part.arguments })
  }
  return { id: response.id, model: response.model, stopReason: response.stopReason, usage: response.usage, text, toolCalls }
}

const usageAttributes = (usage: Usage, attributes: Attributes, outputTokens: boolean): void => {
  attributes[GEN_AI.usageInputTokens] = usage.inputTokens
  if (outputTokens) attributes[GEN_AI.usageOutputTokens] = usage.outputTokens
  if (usage.cacheReadTokens !== undefined) attributes[GEN_AI.usageCacheReadInputTokens] = usage.cacheReadTokens
  if (usage.cacheWriteTokens !== undefined) attributes[GEN_AI.usageCacheCreationInputTokens] = usage.cacheWriteTokens
  if (usage.reasoningTokens !== undefined) attributes[GEN_AI.usageReasoningOutputTokens] = usage.reasoningTokens
}

/**
 * The response attributes of a GenAI span, added to `attributes`. `failed`:
 * the call ended in an error (before or during the answer); output messages
 * then say `error`. `outputTokens: false` (embeddings) leaves the output token
 * count out, as the conventions do for operations that produce none.
 */
export const responseAttributes = (
  summary: GenAiResponseSummary | undefined,
  options: { readonly captureContent: boolean; readonly failed: boolean; readonly outputTokens?: boolean | undefined },
  attributes: Attributes = {}
): Attributes => {
  if (summary === undefined) return attributes
  if (summary.model !== undefined && summary.model !== "") attributes[GEN_AI.responseModel] = summary.model
  if (summary.id !== undefined && summary.id !== "") attributes[GEN_AI.responseId] = summary.id
  if (summary.stopReason !== undefined) attributes[GEN_AI.responseFinishReasons] = [finishReasonOf(summary.stopReason)]
  if (summary.usage !== undefined) usageAttributes(summary.usage, attributes, options.outputTokens !== false)
  const answered = summary.stopReason !== undefined || (summary.text ?? "") !== "" || (summary.toolCalls?.length ?? 0) > 0
  if (options.captureContent && answered) {
    const content = { text: summary.text, toolCalls: summary.toolCalls, stopReason: summary.stopReason, failed: options.failed }
    // Text alone (most answers) is written as JSON text directly; the cap is applied to the objects only when it is needed.
    const text = textOutputJson(content)
    if (text !== undefined && fitsCap(text)) attributes[GEN_AI.outputMessages] = text
    else {
      const output = capJson(outputMessagesOf(content))
      attributes[GEN_AI.outputMessages] = output.json
      if (output.truncated) attributes[GATEWAY_GENAI.contentTruncated] = true
    }
  }
  return attributes
}
