/**
 * `streamGenerateContent?alt=sse` events → canonical stream events. Each
 * `data:` holds a whole `GenerateContentResponse` and there is no terminal
 * event: the stream ends with the connection.
 *
 * - The first event → `message_start` (`responseId`, `modelVersion`).
 * - Parts as in response.ts: text → `text_delta`, thought → `reasoning_delta`
 *   (its signature → `reasoning_signature`), a signature on another part →
 *   `reasoning_signature` before it, a function call (whole in one part) →
 *   `tool_call_start` and one `tool_call_delta` with its arguments.
 * - `finishReason` → `message_delta`, once. A prompt blocked by safety, or a
 *   safety finish before any content → the `content_policy` error
 *   (../safety-block.ts); a safety finish after content → `content_filter`.
 *   `usageMetadata` is cumulative; the last one seen → `usage` at EOF, then
 *   `message_stop`. EOF before a finish → an `error` event (cut off).
 * - `{"error": {code, message, status}}` → an `error` event whose status is the
 *   code (classified like an HTTP error: `RESOURCE_EXHAUSTED` 429 is
 *   `rate_limit`); bad JSON → an `error` event (malformed).
 */
import type { ChatStreamEvent, StreamError, Usage } from "../../domain/chat.ts"
import type { SseEvent, StreamDecoder } from "../contract.ts"
import { eventObject } from "../event-data.ts"
import { safetyBlock } from "../safety-block.ts"
import { isRecord, statusOfGoogleError, stopReasonOfFinish, usageOf } from "./mapping.ts"
import { contentOfPart } from "./response.ts"

const MALFORMED: StreamError = { type: "api_error", message: "upstream sent a malformed stream event", status: 502, malformed: true }
const TRUNCATED: StreamError = { type: "api_error", message: "upstream stream ended before its finish reason", status: 502, malformed: true }

export const makeGeminiStreamDecoder = (): StreamDecoder => {
  const created = Math.floor(Date.now() / 1000)
  let started = false
  let finished = false
  let done = false
  let toolCount = 0
  let usage: Usage | undefined

  const stop = (error: StreamError): ReadonlyArray<ChatStreamEvent> => {
    done = true
    return [{ type: "error", error }]
  }

  // Whether anything a caller sees was decoded yet: a safety block before it is an error, after it a finish.
  let answered = false

  const partEvents = (part: Record<string, unknown>, out: Array<ChatStreamEvent>): void => {
    for (const content of contentOfPart(part)) {
      answered ||= content.type !== "text" || content.text !== ""
      if (content.type === "text") {
        if (content.text !== "") out.push({ type: "text_delta", text: content.text })
      } else if (content.type === "reasoning") {
        if (content.text !== "") out.push({ type: "reasoning_delta", text: content.text })
        if (content.signature !== undefined) out.push({ type: "reasoning_signature", signature: content.signature })
      } else {
        const index = toolCount++
        out.push({ type: "tool_call_start", index, id: content.id, name: content.name })
        out.push({ type: "tool_call_delta", index, argumentsDelta: content.arguments })
      }
    }
  }

  const chunk = (message: Record<string, unknown>): ReadonlyArray<ChatStreamEvent> => {
    const out: Array<ChatStreamEvent> = []
    if (!started) {
      started = true
      out.push({
        type: "message_start",
        id: typeof message.responseId === "string" ? message.responseId : "",
        model: typeof message.modelVersion === "string" ? message.modelVersion : "",
        created
      })
    }
    usage = usageOf(message.usageMetadata) ?? usage
    const candidate = Array.isArray(message.candidates) && isRecord(message.candidates[0]) ? message.candidates[0] : undefined
    const parts = candidate !== undefined && isRecord(candidate.content) && Array.isArray(candidate.content.parts)
      ? candidate.content.parts
      : []
    for (const part of parts) if (isRecord(part)) partEvents(part, out)
    const blockReason = candidate === undefined && isRecord(message.promptFeedback) ? message.promptFeedback.blockReason : undefined
    if (typeof blockReason === "string") return [...out, ...stop(safetyBlock("prompt", blockReason))]
    if (!finished && typeof candidate?.finishReason === "string") {
      const stopReason = stopReasonOfFinish(candidate.finishReason, toolCount > 0)
      if (stopReason === "content_filter" && !answered) return [...out, ...stop(safetyBlock("answer", candidate.finishReason))]
      finished = true
      out.push({ type: "message_delta", stopReason })
    }
    return out
  }

  return {
    push(event: SseEvent): ReadonlyArray<ChatStreamEvent> {
      if (done || event.data.trim() === "") return []
      const message = eventObject(event.data)
      if (message === undefined) return stop(MALFORMED)
      if (isRecord(message.error)) return stop(streamError(message.error))
      return chunk(message)
    },
    end(): ReadonlyArray<ChatStreamEvent> {
      if (done) return []
      if (!finished) return stop(TRUNCATED)
      done = true
      return usage === undefined ? [{ type: "message_stop" }] : [{ type: "usage", usage }, { type: "message_stop" }]
    }
  }
}

const streamError = (error: Record<string, unknown>): StreamError => {
  const status = statusOfGoogleError(error)
  const name = typeof error.status === "string" ? error.status : undefined
  return {
    type: name ?? "api_error",
    message: typeof error.message === "string" ? error.message : "upstream reported an error",
    status,
    code: name
  }
}
