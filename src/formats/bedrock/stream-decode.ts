/**
 * ConverseStream events → canonical stream events. The events arrive in
 * Amazon's binary event stream; the framer (src/providers/eventstream.ts)
 * hands each message over as an `SseEvent` whose `event` is its `:event-type`
 * (or, for an exception, its `:exception-type`) and whose `data` is its JSON
 * payload.
 *
 * - `messageStart` → `message_start`.
 * - `contentBlockStart` with `toolUse` → `tool_call_start` (index: a running
 *   count of tool blocks); `contentBlockDelta` → text, tool input, reasoning
 *   text, signature or redacted deltas. The structured-output tool's input
 *   (`JSON_TOOL`) is text.
 * - `messageStop` → `message_delta` (its `stopReason`; `end_turn` for the
 *   structured-output tool); `metadata` → `usage`, then `message_stop`.
 *   EOF after `messageStop` without `metadata` still ends normally; EOF before
 *   `messageStop` is cut off: an `error` event. A guardrail or content filter
 *   stop with no content before it → the `content_policy` error (../safety-block.ts).
 * - An exception (`throttlingException`, `serviceUnavailableException`, …) →
 *   an `error` event whose type is the exception's name and whose status is
 *   its HTTP equivalent, so it is classified as the HTTP error would be.
 */
import type { ChatStreamEvent, StreamError } from "../../domain/chat.ts"
import type { SseEvent, StreamDecoder } from "../contract.ts"
import { eventObject } from "../event-data.ts"
import { safetyBlock } from "../safety-block.ts"
import { isRecord, JSON_TOOL, stopReasonOfWire, usageOf } from "./mapping.ts"

const MALFORMED: StreamError = { type: "api_error", message: "upstream sent a malformed stream event", status: 502, malformed: true }
const TRUNCATED: StreamError = { type: "api_error", message: "upstream stream ended before messageStop", status: 502, malformed: true }

/** HTTP status each ConverseStream exception stands for. */
const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  throttlingException: 429,
  validationException: 400,
  accessDeniedException: 403,
  resourceNotFoundException: 404,
  modelStreamErrorException: 502,
  modelTimeoutException: 504,
  internalServerException: 500,
  serviceUnavailableException: 503,
  serviceQuotaExceededException: 429,
  modelNotReadyException: 503
}

export const makeBedrockStreamDecoder = (): StreamDecoder => {
  const created = Math.floor(Date.now() / 1000)
  let started = false
  let stopped = false
  let done = false
  let toolCount = 0
  let structured = false
  const toolOfBlock = new Map<number, number>()
  let jsonBlock: number | undefined
  // Whether anything a caller sees was decoded yet: a guardrail before it is an error, after it a finish.
  let answered = false

  const finish = (events: Array<ChatStreamEvent>): ReadonlyArray<ChatStreamEvent> => {
    done = true
    return events
  }

  const start = (out: Array<ChatStreamEvent>): void => {
    if (started) return
    started = true
    out.push({ type: "message_start", id: "", model: "", created })
  }

  const blockStart = (message: Record<string, unknown>): ReadonlyArray<ChatStreamEvent> => {
    const use = isRecord(message.start) && isRecord(message.start.toolUse) ? message.start.toolUse : undefined
    const index = message.contentBlockIndex
    if (use === undefined || typeof index !== "number") return []
    if (use.name === JSON_TOOL) {
      structured = true
      jsonBlock = index
      return []
    }
    const tool = toolCount++
    toolOfBlock.set(index, tool)
    return [{ type: "tool_call_start", index: tool, id: typeof use.toolUseId === "string" ? use.toolUseId : "", name: typeof use.name === "string" ? use.name : "" }]
  }

  const blockDelta = (message: Record<string, unknown>): ReadonlyArray<ChatStreamEvent> => {
    const delta = isRecord(message.delta) ? message.delta : {}
    if (typeof delta.text === "string") return delta.text === "" ? [] : [{ type: "text_delta", text: delta.text }]
    if (isRecord(delta.toolUse) && typeof delta.toolUse.input === "string" && delta.toolUse.input !== "") {
      if (message.contentBlockIndex === jsonBlock) return [{ type: "text_delta", text: delta.toolUse.input }]
      const tool = typeof message.contentBlockIndex === "number" ? toolOfBlock.get(message.contentBlockIndex) : undefined
      return tool === undefined ? [] : [{ type: "tool_call_delta", index: tool, argumentsDelta: delta.toolUse.input }]
    }
    const reasoning = isRecord(delta.reasoningContent) ? delta.reasoningContent : undefined
    if (reasoning === undefined) return []
    if (typeof reasoning.text === "string") return reasoning.text === "" ? [] : [{ type: "reasoning_delta", text: reasoning.text }]
    if (typeof reasoning.signature === "string") return [{ type: "reasoning_signature", signature: reasoning.signature }]
    if (typeof reasoning.redactedContent === "string") return [{ type: "reasoning_redacted", data: reasoning.redactedContent }]
    return []
  }

  const exception = (name: string, message: Record<string, unknown>): StreamError => ({
    type: name,
    message: typeof message.message === "string" ? message.message : name,
    status: Object.hasOwn(EXCEPTION_STATUS, name) ? EXCEPTION_STATUS[name] : 500,
    code: name
  })

  return {
    push(event: SseEvent): ReadonlyArray<ChatStreamEvent> {
      if (done) return []
      const message = event.data.trim() === "" ? {} : eventObject(event.data)
      if (message === undefined) return finish([{ type: "error", error: MALFORMED }])
      const name = event.event ?? ""
      if (name.endsWith("Exception")) return finish([{ type: "error", error: exception(name, message) }])
      const out: Array<ChatStreamEvent> = []
      start(out)
      switch (name) {
        case "contentBlockStart":
        case "contentBlockDelta": {
          const events = name === "contentBlockStart" ? blockStart(message) : blockDelta(message)
          answered ||= events.length > 0
          out.push(...events)
          break
        }
        case "messageStop":
          if (!stopped) {
            const stopReason = structured ? "end_turn" : stopReasonOfWire(message.stopReason)
            if (stopReason === "content_filter" && !answered) return finish([...out, { type: "error", error: safetyBlock("answer", String(message.stopReason)) }])
            stopped = true
            out.push({ type: "message_delta", stopReason })
          }
          break
        case "metadata": {
          const usage = usageOf(message.usage)
          if (usage !== undefined) out.push({ type: "usage", usage })
          if (stopped) return finish([...out, { type: "message_stop" }])
          break
        }
      }
      return out
    },
    end(): ReadonlyArray<ChatStreamEvent> {
      if (done) return []
      return finish([stopped ? { type: "message_stop" } : { type: "error", error: TRUNCATED }])
    }
  }
}
