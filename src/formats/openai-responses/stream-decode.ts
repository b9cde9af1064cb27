/**
 * Responses API stream events → canonical stream events, for a Responses
 * caller served by a provider's own `/responses` (the fast path): the bytes go
 * to the caller as they came, and this decoder tells the gateway what they
 * say (the commit point, text for the guardrail and telemetry, usage).
 *
 * - `response.created` (or the first event) opens the message; text and
 *   refusal deltas are text; a `function_call` item starts a tool call and its
 *   argument deltas follow it; any other output item (reasoning, a built-in
 *   tool's call) is `other_content`.
 * - `response.completed` / `response.incomplete` give the finish, the usage and
 *   the stop; `response.failed` and `error` events are errors; a stream that
 *   ends without one of them was cut off.
 * - Hot path: no `JSON.parse` for an event of a shape learnt from an earlier
 *   stream (`JsonShape`: the same JSON but for its ids, text, arguments,
 *   sequence number, creation time, token counts and `obfuscation` pad), as
 *   for Chat Completions chunks; after a text delta, one of the same shape
 *   (`TextChunkTemplate`: the same JSON but for its text, `sequence_number`
 *   and `obfuscation`) is read straight to its text.
 */
import type { ChatStreamEvent, StreamError } from "../../domain/chat.ts"
import { pushInto } from "../contract.ts"
import type { ChatEventSink, SinkStreamDecoder } from "../contract.ts"
import { JsonShapes } from "../json-shape.ts"
import { TextChunkTemplate } from "../text-chunk-template.ts"
import type { Hole } from "../text-chunk-template.ts"
import { trimmed } from "../event-data.ts"
import { statusOfOpenAiError } from "../openai-chat/error.ts"
import { isRecord, messageStartOf } from "../openai-chat/mapping.ts"
import { decodeUsage, stopReasonOfResponse } from "./mapping.ts"

const MALFORMED: StreamError = { type: "server_error", message: "upstream sent a malformed stream event", status: 502, malformed: true }
const TRUNCATED: StreamError = {
  type: "server_error",
  message: "upstream stream ended before response.completed",
  status: 502,
  malformed: true
}

const errorOf = (raw: unknown): StreamError => {
  const error = isRecord(raw) && isRecord(raw.error) ? raw.error : raw
  const fields = isRecord(error) ? error : {}
  const type = typeof fields.type === "string" ? fields.type : undefined
  const code = typeof fields.code === "string" ? fields.code : undefined
  return {
    type: type ?? code ?? "server_error",
    message: typeof fields.message === "string" ? fields.message : "upstream reported an error",
    status: statusOfOpenAiError(type, fields.code),
    code
  }
}

/** Shapes learnt per stream at most: a stream whose text deltas keep changing shape is parsed. */
const MAX_TEMPLATES = 4

/**
 * The event shapes of the last streams (a model's lifecycle, item and text
 * events): cut at the values that differ from event to event and stream to
 * stream (the response's and items' ids, text, deltas, arguments, call ids,
 * the obfuscation pad, a previous response's id and the instructions echoed,
 * and the integers: sequence numbers, creation time, token counts; an
 * `output_index`, `content_index` or `summary_index` stays). An error is not
 * kept.
 */
const SHAPES = new JsonShapes(16, {
  strings: new Set(["id", "item_id", "call_id", "text", "delta", "refusal", "arguments", "obfuscation", "previous_response_id", "instructions"]),
  fixedIntegers: new Set(["output_index", "content_index", "summary_index"]),
  learns: (event) => event.type !== "error" && event.type !== "response.failed"
})

export const makeResponsesStreamDecoder = (): SinkStreamDecoder => {
  let started = false
  let done = false
  let tools = 0
  const toolOfItem = new Map<unknown, number>()

  const stop = (event: ChatStreamEvent, out: ChatEventSink): void => {
    done = true
    out.push(event)
  }

  const open = (response: Record<string, unknown>, out: ChatEventSink): void => {
    if (started) return
    started = true
    out.push(messageStartOf(response.id, response.model, response.created_at))
  }

  const finish = (response: Record<string, unknown>, out: ChatEventSink): void => {
    const stopReason = stopReasonOfResponse(response, tools > 0) ?? "end_turn"
    out.push({ type: "message_delta", stopReason })
    const usage = decodeUsage(response.usage)
    if (usage !== undefined) out.push({ type: "usage", usage })
    stop({ type: "message_stop" }, out)
  }

  /** This stream's reading of its events: most match a shape learnt earlier (see JsonShape) and are not parsed. */
  const reader = SHAPES.reader()

  /** The shape of this stream's text deltas, once one was seen (see TextChunkTemplate). */
  let textDelta: TextChunkTemplate | undefined
  let learnt = 0

  /**
   * Learns the shape of a text delta: one of its shape is a text delta whatever its text, sequence
   * number and pad. Read by a shape, its template is cut from its text where the shape's holes were.
   */
  const learn = (data: string, message: Record<string, unknown>): void => {
    if (learnt >= MAX_TEMPLATES || message.response !== undefined) return
    learnt++
    const holes: Array<Hole> = [{ owner: message, key: "delta", kind: "text" }]
    if (typeof message.sequence_number === "number") holes.push({ owner: message, key: "sequence_number", kind: "integer" })
    if (typeof message.obfuscation === "string") holes.push({ owner: message, key: "obfuscation", kind: "string" })
    textDelta = reader.matched?.textTemplate(data, holes) ?? TextChunkTemplate.learn(data, message, holes)
    // Not the compact serialization: the upstream's serializer differs, and will for every chunk.
    if (textDelta === undefined) learnt = MAX_TEMPLATES
  }

  const decodeInto = (raw: string, name: string | undefined, out: ChatEventSink): void => {
    if (done) return
    const data = trimmed(raw)
    const text = textDelta?.match(data, out.textRead !== false)
    if (text !== undefined) {
      if (text !== "") out.push({ type: "text_delta", text })
      return
    }
    if (data === "" || data.startsWith("[DONE]")) return
    const message = reader.read(data)
    if (message === undefined) return stop({ type: "error", error: MALFORMED }, out)
    const type = typeof message.type === "string" ? message.type : name
    const response = isRecord(message.response) ? message.response : undefined
    if (response !== undefined) open(response, out)
    switch (type) {
      case "response.output_item.added": {
        const item = isRecord(message.item) ? message.item : {}
        if (item.type === "function_call") {
          const index = tools++
          toolOfItem.set(message.output_index, index)
          out.push({
            type: "tool_call_start",
            index,
            id: typeof item.call_id === "string" ? item.call_id : "",
            name: typeof item.name === "string" ? item.name : ""
          })
          if (typeof item.arguments === "string" && item.arguments !== "") {
            out.push({ type: "tool_call_delta", index, argumentsDelta: item.arguments })
          }
        } else if (item.type !== "message" && typeof item.type === "string") {
          out.push({ type: "other_content", kind: item.type })
        }
        return
      }
      case "response.output_text.delta":
      case "response.refusal.delta":
        if (typeof message.delta !== "string") return
        if (message.delta !== "") out.push({ type: "text_delta", text: message.delta })
        if (message.type === type) learn(data, message)
        return
      case "response.function_call_arguments.delta": {
        const index = toolOfItem.get(message.output_index)
        if (index !== undefined && typeof message.delta === "string" && message.delta !== "") {
          out.push({ type: "tool_call_delta", index, argumentsDelta: message.delta })
        }
        return
      }
      case "response.completed":
      case "response.incomplete":
        return finish(response ?? {}, out)
      case "response.failed":
        return stop({ type: "error", error: errorOf(response?.error ?? message) }, out)
      case "error":
        return stop({ type: "error", error: errorOf(message) }, out)
      default:
        return
    }
  }

  return {
    decodeInto,
    push: pushInto(decodeInto),
    end(): ReadonlyArray<ChatStreamEvent> {
      if (done) return []
      const out: Array<ChatStreamEvent> = []
      stop({ type: "error", error: TRUNCATED }, out)
      return out
    }
  }
}
