/**
 * Converse response → canonical `ChatResponse`: `output.message.content`
 * blocks (text, `toolUse`, `reasoningContent` with its signature or redacted
 * bytes), `stopReason`, `usage`. The structured-output tool's call
 * (`JSON_TOOL`) is the answer's text, finishing with `end_turn`. A guardrail or
 * content filter that let nothing through is the `content_policy` error
 * (../safety-block.ts). Converse has
 * no response id: the `x-amzn-requestid` is not in the body, so the id is empty.
 */
import { Result } from "effect"
import type { ChatResponse } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { answeredNothing, safetyBlock } from "../safety-block.ts"
import { isRecord, JSON_TOOL, stopReasonOfWire, usageOf } from "./mapping.ts"

type Content = ChatResponse["content"][number]

export const decodeBedrockResponse = (json: unknown): Result.Result<ChatResponse, DecodeFailure> => {
  if (!isRecord(json)) return Result.fail({ message: "upstream response is not a JSON object" })
  const message = isRecord(json.output) && isRecord(json.output.message) ? json.output.message : undefined
  if (message === undefined || !Array.isArray(message.content)) return Result.fail({ message: "upstream response has no output message" })
  const content: Array<Content> = []
  let structured = false
  for (const block of message.content) {
    if (!isRecord(block)) return Result.fail({ message: "upstream response has a malformed content block" })
    if (typeof block.text === "string") content.push({ type: "text", text: block.text })
    else if (isRecord(block.toolUse)) {
      const use = block.toolUse
      const input = JSON.stringify(use.input ?? {})
      if (use.name === JSON_TOOL) {
        structured = true
        content.push({ type: "text", text: input })
      } else {
        content.push({ type: "tool_call", id: typeof use.toolUseId === "string" ? use.toolUseId : "", name: typeof use.name === "string" ? use.name : "", arguments: input })
      }
    } else if (isRecord(block.reasoningContent)) {
      const reasoning = block.reasoningContent
      if (isRecord(reasoning.reasoningText)) {
        const text = typeof reasoning.reasoningText.text === "string" ? reasoning.reasoningText.text : ""
        const signature = typeof reasoning.reasoningText.signature === "string" ? reasoning.reasoningText.signature : undefined
        content.push({ type: "reasoning", text, signature })
      } else if (typeof reasoning.redactedContent === "string") {
        content.push({ type: "reasoning", text: "", redacted: reasoning.redactedContent })
      }
    }
  }
  const stopReason = structured ? "end_turn" : stopReasonOfWire(json.stopReason)
  if (stopReason === "content_filter" && answeredNothing(content)) {
    const reported = safetyBlock("answer", String(json.stopReason))
    return Result.fail({ message: reported.message, reported })
  }
  return Result.succeed({
    id: "",
    model: "",
    created: Math.floor(Date.now() / 1000),
    content,
    stopReason,
    usage: usageOf(json.usage) ?? { inputTokens: 0, outputTokens: 0 }
  })
}
