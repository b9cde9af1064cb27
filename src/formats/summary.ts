/**
 * What the log line, telemetry and the output guardrail need from a chat
 * response body forwarded verbatim (the fast path): model, id, finish reason,
 * usage, the answer's text and its tool calls. The body was parsed anyway (a held body must
 * parse before it is sent), so this only reads fields; it never decides what
 * the caller sees.
 */
import type { StopReason, Usage } from "../domain/chat.ts"
import type { CallerFormat } from "../domain/sdk.ts"
import { readUsageCounts, stopReasonOfWire, usageOfCounts } from "./anthropic/mapping.ts"
import { decodeUsage, isRecord, stopReasonOfFinish } from "./openai-chat/mapping.ts"
import { decodeUsage as decodeResponsesUsage, stopReasonOfResponse } from "./openai-responses/mapping.ts"

export interface ToolCallSummary {
  readonly id: string
  readonly name: string
  /** The arguments as JSON text (Anthropic's `input` object serialized). */
  readonly arguments: string
}

export interface ChatSummary {
  readonly id?: string | undefined
  readonly model?: string | undefined
  readonly stopReason?: StopReason | undefined
  readonly usage?: Usage | undefined
  /** The visible text of the answer, in order ("" when it has none). */
  readonly text: string
  readonly toolCalls?: ReadonlyArray<ToolCallSummary> | undefined
}

const stringOr = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

const openAiSummary = (json: Record<string, unknown>): ChatSummary => {
  const choice = Array.isArray(json.choices) && isRecord(json.choices[0]) ? json.choices[0] : undefined
  const message = isRecord(choice?.message) ? choice.message : undefined
  const finish = choice?.finish_reason
  return {
    id: stringOr(json.id),
    model: stringOr(json.model),
    stopReason: typeof finish === "string" ? stopReasonOfFinish(finish, Array.isArray(message?.tool_calls)) : undefined,
    usage: decodeUsage(json.usage),
    text: (stringOr(message?.content) ?? "") + (stringOr(message?.refusal) ?? ""),
    toolCalls: Array.isArray(message?.tool_calls)
      ? message.tool_calls.filter(isRecord).map((call) => {
        const fn = isRecord(call.function) ? call.function : {}
        return { id: stringOr(call.id) ?? "", name: stringOr(fn.name) ?? "", arguments: typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {}) }
      })
      : undefined
  }
}

const anthropicSummary = (json: Record<string, unknown>): ChatSummary => {
  const counts = readUsageCounts(json.usage)
  let text = ""
  const toolCalls: Array<ToolCallSummary> = []
  if (Array.isArray(json.content)) {
    for (const block of json.content) {
      if (!isRecord(block)) continue
      if (block.type === "text") text += stringOr(block.text) ?? ""
      else if (block.type === "tool_use") toolCalls.push({ id: stringOr(block.id) ?? "", name: stringOr(block.name) ?? "", arguments: JSON.stringify(block.input ?? {}) })
    }
  }
  return {
    id: stringOr(json.id),
    model: stringOr(json.model),
    stopReason: typeof json.stop_reason === "string" ? stopReasonOfWire(json.stop_reason) : undefined,
    usage: counts === undefined ? undefined : usageOfCounts(counts),
    text,
    toolCalls
  }
}

const responsesSummary = (json: Record<string, unknown>): ChatSummary => {
  let text = ""
  const toolCalls: Array<ToolCallSummary> = []
  if (Array.isArray(json.output)) {
    for (const item of json.output) {
      if (!isRecord(item)) continue
      if (item.type === "function_call") {
        toolCalls.push({ id: stringOr(item.call_id) ?? "", name: stringOr(item.name) ?? "", arguments: stringOr(item.arguments) ?? "" })
      }
      if (item.type !== "message" || !Array.isArray(item.content)) continue
      for (const part of item.content) {
        if (isRecord(part)) text += stringOr(part.type === "refusal" ? part.refusal : part.text) ?? ""
      }
    }
  }
  return {
    id: stringOr(json.id),
    model: stringOr(json.model),
    stopReason: stopReasonOfResponse(json, toolCalls.length > 0),
    usage: decodeResponsesUsage(json.usage),
    text,
    toolCalls
  }
}

export const summarizeChatJson = (format: CallerFormat, json: unknown): ChatSummary => {
  if (!isRecord(json)) return { text: "" }
  switch (format) {
    case "openai":
      return openAiSummary(json)
    case "anthropic":
      return anthropicSummary(json)
    case "responses":
      return responsesSummary(json)
  }
}
