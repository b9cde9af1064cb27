/**
 * Chat Completions response ⇄ canonical `ChatResponse` (docs/reference/translation.md §8).
 *
 * Decoding reads `choices[0]` only (the gateway never asks for `n > 1` across
 * families). A `refusal` becomes a text part marked `refusal` and the stop
 * reason `content_filter`. A body without `choices[0].message` is a failure, not a
 * crash: a malformed upstream success must reach the caller as an error.
 */
import { Result } from "effect"
import type { ChatResponse, TextPart, ToolCallPart } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { completionId, decodeUsage, encodeUsage, finishReasonOf, isRecord, stopReasonOfFinish } from "./mapping.ts"

export interface ResponseDecodeOptions {
  /** `created` when the body has none (Unix seconds); default: now. */
  readonly created?: number | undefined
}

export const decodeOpenAiChatResponse = (
  json: unknown,
  options: ResponseDecodeOptions = {}
): Result.Result<ChatResponse, DecodeFailure> => {
  if (!isRecord(json)) return Result.fail({ message: "upstream response is not a JSON object" })
  const choice = Array.isArray(json.choices) ? json.choices[0] : undefined
  if (!isRecord(choice) || !isRecord(choice.message)) {
    return Result.fail({ message: "upstream response has no choices[0].message" })
  }
  const message = choice.message
  const content: Array<TextPart | ToolCallPart> = []
  const text = textOf(message.content)
  if (text !== "") content.push({ type: "text", text })
  const refusal = typeof message.refusal === "string" && message.refusal !== "" ? message.refusal : undefined
  if (refusal !== undefined) content.push({ type: "text", text: refusal, refusal: true })
  let hasToolCalls = false
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isRecord(call) || !isRecord(call.function)) {
        return Result.fail({ message: "upstream response has a malformed tool call" })
      }
      const args = call.function.arguments
      content.push({
        type: "tool_call",
        id: typeof call.id === "string" ? call.id : "",
        name: typeof call.function.name === "string" ? call.function.name : "",
        arguments: typeof args === "string" ? args : JSON.stringify(args ?? {})
      })
      hasToolCalls = true
    }
  }
  return Result.succeed({
    id: typeof json.id === "string" ? json.id : "",
    model: typeof json.model === "string" ? json.model : "",
    created: typeof json.created === "number" ? json.created : options.created ?? Math.floor(Date.now() / 1000),
    content,
    stopReason: refusal !== undefined ? "content_filter" : stopReasonOfFinish(choice.finish_reason, hasToolCalls),
    usage: decodeUsage(json.usage) ?? { inputTokens: 0, outputTokens: 0 }
  })
}

// `content` is a string on OpenAI; some compatible servers send text parts.
const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  let text = ""
  for (const part of content) {
    if (isRecord(part) && typeof part.text === "string") text += part.text
  }
  return text
}

export interface ResponseEncodeOptions {
  /** Model name to show the caller instead of the upstream's. */
  readonly model?: string | undefined
}

/** Canonical → `chat.completion`: text concatenated (null when none), `tool_calls` only when there are some. */
export const encodeOpenAiChatResponse = (
  res: ChatResponse,
  options: ResponseEncodeOptions = {}
): Record<string, unknown> => {
  let text: string | null = null
  const toolCalls: Array<unknown> = []
  for (const part of res.content) {
    if (part.type === "text") text = (text ?? "") + part.text
    else if (part.type === "tool_call") toolCalls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } })
  }
  const message: Record<string, unknown> = { role: "assistant", content: text, refusal: null }
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  return {
    id: completionId(res.id),
    object: "chat.completion",
    created: res.created,
    model: options.model ?? res.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(res.stopReason) }],
    usage: encodeUsage(res.usage)
  }
}
