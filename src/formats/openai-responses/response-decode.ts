/**
 * A Responses API `Response` object → canonical `ChatResponse`: what the
 * gateway keeps of a Responses answer it forwarded byte for byte (its text,
 * function calls, stop and usage), so it can be replayed later in any form.
 * Output items the canonical model does not hold (reasoning, built-in tool
 * calls) are left out.
 */
import { Result } from "effect"
import type { ChatResponse, TextPart, ToolCallPart } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { isRecord } from "../openai-chat/mapping.ts"
import { decodeUsage, stopReasonOfResponse } from "./mapping.ts"

export const decodeResponsesResponse = (json: unknown): Result.Result<ChatResponse, DecodeFailure> => {
  if (!isRecord(json) || !Array.isArray(json.output)) return Result.fail({ message: "upstream response is not a Response object" })
  const content: Array<TextPart | ToolCallPart> = []
  for (const item of json.output) {
    if (!isRecord(item)) continue
    if (item.type === "function_call") {
      content.push({
        type: "tool_call",
        id: typeof item.call_id === "string" ? item.call_id : "",
        name: typeof item.name === "string" ? item.name : "",
        arguments: typeof item.arguments === "string" ? item.arguments : ""
      })
    } else if (item.type === "message" && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (!isRecord(part)) continue
        const text = part.type === "refusal" ? part.refusal : part.text
        if (typeof text === "string" && text !== "") content.push({ type: "text", text })
      }
    }
  }
  const stopReason = stopReasonOfResponse(json, content.some((part) => part.type === "tool_call"))
  if (stopReason === undefined) return Result.fail({ message: `upstream response is not finished (status ${String(json.status)})` })
  return Result.succeed({
    id: typeof json.id === "string" ? json.id : "",
    model: typeof json.model === "string" ? json.model : "",
    created: typeof json.created_at === "number" ? json.created_at : 0,
    content,
    stopReason,
    usage: decodeUsage(json.usage) ?? { inputTokens: 0, outputTokens: 0 }
  })
}
