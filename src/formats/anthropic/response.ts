/**
 * Messages response ⇄ canonical `ChatResponse` (docs/reference/translation.md §8).
 *
 * Decoding keeps text, `tool_use`, `thinking` (with its signature) and
 * `redacted_thinking` (its `data`) blocks; citations and server-tool blocks
 * have no canonical home and are left out. A body without a
 * `content` array is a failure, not a crash: a malformed upstream success must
 * reach the caller as an error.
 */
import { Result } from "effect"
import type { ChatResponse } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import {
  cleanToolId,
  encodeUsage,
  isRecord,
  messageId,
  readUsageCounts,
  stopReasonOfWire,
  toolInput,
  usageOfCounts,
  wireStopReason
} from "./mapping.ts"

export interface ResponseDecodeOptions {
  /** `created` for the canonical response (Messages has none; Unix seconds); default: now. */
  readonly created?: number | undefined
}

export const decodeAnthropicResponse = (
  json: unknown,
  options: ResponseDecodeOptions = {}
): Result.Result<ChatResponse, DecodeFailure> => {
  if (!isRecord(json)) return Result.fail({ message: "upstream response is not a JSON object" })
  if (!Array.isArray(json.content)) return Result.fail({ message: "upstream response has no content array" })
  const content: Array<ChatResponse["content"][number]> = []
  for (const block of json.content) {
    if (!isRecord(block)) return Result.fail({ message: "upstream response has a malformed content block" })
    if (block.type === "text" && typeof block.text === "string") {
      content.push({ type: "text", text: block.text })
    } else if (block.type === "tool_use") {
      content.push({
        type: "tool_call",
        id: typeof block.id === "string" ? block.id : "",
        name: typeof block.name === "string" ? block.name : "",
        arguments: JSON.stringify(block.input ?? {})
      })
    } else if (block.type === "thinking" && typeof block.thinking === "string") {
      const signature = typeof block.signature === "string" ? block.signature : undefined
      content.push({ type: "reasoning", text: block.thinking, signature })
    } else if (block.type === "redacted_thinking" && typeof block.data === "string") {
      content.push({ type: "reasoning", text: "", redacted: block.data })
    }
  }
  return Result.succeed({
    id: typeof json.id === "string" ? json.id : "",
    model: typeof json.model === "string" ? json.model : "",
    created: options.created ?? Math.floor(Date.now() / 1000),
    content,
    stopReason: stopReasonOfWire(json.stop_reason),
    stopSequence: typeof json.stop_sequence === "string" ? json.stop_sequence : undefined,
    usage: usageOfCounts(readUsageCounts(json.usage) ?? { input: 0, output: 0 })
  })
}

export interface ResponseEncodeOptions {
  /** Model name to show the caller instead of the upstream's. */
  readonly model?: string | undefined
}

/**
 * Canonical → Messages `message`. Empty text is left out (Anthropic never
 * sends empty text blocks); tool ids are cleaned as in requests, so the ids a
 * caller sends back match; arguments that are not a JSON object become `{}`.
 */
export const encodeAnthropicResponse = (
  res: ChatResponse,
  options: ResponseEncodeOptions = {}
): Record<string, unknown> => {
  const content: Array<Record<string, unknown>> = []
  for (const part of res.content) {
    if (part.type === "text") {
      if (part.text !== "") content.push({ type: "text", text: part.text })
    } else if (part.type === "tool_call") {
      content.push({ type: "tool_use", id: cleanToolId(part.id), name: part.name, input: toolInput(part.arguments) })
    }
  }
  return {
    id: messageId(res.id),
    type: "message",
    role: "assistant",
    model: options.model ?? res.model,
    content,
    stop_reason: wireStopReason(res.stopReason),
    stop_sequence: res.stopSequence ?? null,
    usage: encodeUsage(res.usage)
  }
}
