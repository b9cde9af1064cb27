/**
 * `generateContent` response → canonical `ChatResponse`.
 *
 * The first candidate is read: text parts → text, `thought: true` parts →
 * reasoning, `functionCall` parts → tool calls (arguments as JSON text, the id
 * carrying the part's thought signature, mapping.ts). A signature on any other
 * part becomes a reasoning part's signature just before it, so a caller that
 * keeps reasoning (the Responses API) sends it back where it was.
 * A prompt blocked by safety (`promptFeedback.blockReason`, no candidate), or a
 * candidate blocked with nothing in it, is the `content_policy` error
 * (../safety-block.ts); a candidate blocked after some content stops for `content_filter`.
 * A body that is not an object, or has neither candidates nor a block reason,
 * is a failure.
 */
import { Result } from "effect"
import type { ChatResponse } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { answeredNothing, safetyBlock } from "../safety-block.ts"
import { isRecord, stopReasonOfFinish, toolCallIdOf, usageOf } from "./mapping.ts"

type Content = ChatResponse["content"][number]

export const decodeGeminiResponse = (json: unknown): Result.Result<ChatResponse, DecodeFailure> => {
  if (!isRecord(json)) return Result.fail({ message: "upstream response is not a JSON object" })
  const candidate = Array.isArray(json.candidates) && isRecord(json.candidates[0]) ? json.candidates[0] : undefined
  const blocked = isRecord(json.promptFeedback) && typeof json.promptFeedback.blockReason === "string"
  if (candidate === undefined && !blocked) return Result.fail({ message: "upstream response has no candidates" })
  const parts = candidate !== undefined && isRecord(candidate.content) && Array.isArray(candidate.content.parts)
    ? candidate.content.parts
    : []
  const content: Array<Content> = []
  for (const part of parts) {
    if (!isRecord(part)) return Result.fail({ message: "upstream response has a malformed part" })
    content.push(...contentOfPart(part))
  }
  const hasToolCalls = content.some((part) => part.type === "tool_call")
  const stopReason = candidate === undefined ? "content_filter" : stopReasonOfFinish(candidate.finishReason, hasToolCalls)
  if (stopReason === "content_filter" && answeredNothing(content)) {
    const reported = candidate === undefined
      ? safetyBlock("prompt", String((json.promptFeedback as Record<string, unknown>).blockReason))
      : safetyBlock("answer", String(candidate.finishReason))
    return Result.fail({ message: reported.message, reported })
  }
  return Result.succeed({
    id: typeof json.responseId === "string" ? json.responseId : "",
    model: typeof json.modelVersion === "string" ? json.modelVersion : "",
    created: Math.floor(Date.now() / 1000),
    content,
    stopReason,
    usage: usageOf(json.usageMetadata) ?? { inputTokens: 0, outputTokens: 0 }
  })
}

/** The canonical parts one Gemini part stands for (none for a part the canonical model has no room for). */
export const contentOfPart = (part: Record<string, unknown>): ReadonlyArray<Content> => {
  const signature = typeof part.thoughtSignature === "string" && part.thoughtSignature !== "" ? part.thoughtSignature : undefined
  if (isRecord(part.functionCall)) {
    const call = part.functionCall
    return [{
      type: "tool_call",
      id: toolCallIdOf(call.id, signature),
      name: typeof call.name === "string" ? call.name : "",
      arguments: JSON.stringify(isRecord(call.args) ? call.args : {})
    }]
  }
  if (typeof part.text !== "string") return signature === undefined ? [] : [{ type: "reasoning", text: "", signature }]
  if (part.thought === true) return [{ type: "reasoning", text: part.text, signature }]
  const text: Content = { type: "text", text: part.text }
  return signature === undefined ? [text] : [{ type: "reasoning", text: "", signature }, text]
}
