/**
 * Messages SSE events → canonical stream events (docs/reference/anthropic-messages.md §5).
 *
 * - `message_start` → `message_start` carrying the input usage known up front.
 * - A `tool_use` block start → `tool_call_start` whose index is a running
 *   count of tool blocks, not the block index (a text block usually takes 0).
 * - A `thinking` block → `reasoning_delta`s (one at its start, so it commits
 *   the response even before any text) and, from its `signature_delta`,
 *   `reasoning_signature`.
 * - A `redacted_thinking` block → `reasoning_redacted` with its `data` (it
 *   arrives whole in the block start).
 * - Any other block start (server-tool blocks, …) → `other_content`: not
 *   carried, but content (it commits the response).
 * - `text_delta` / `input_json_delta` → text and argument deltas; empty ones,
 *   citation deltas, `ping` and unknown events → nothing.
 * - `message_delta` → the finish (once) and `usage`: output is cumulative;
 *   input comes from `message_start`, replaced by any non-null field here.
 * - `message_stop` after a finish → `message_stop`. Without a finish, or EOF
 *   before `message_stop`, the stream was cut off: an `error` event.
 *
 * The event type is read from the JSON `type`, falling back to the `event:`
 * name. Hot path: no `JSON.parse` for an event of a shape learnt from an
 * earlier stream (`JsonShape`), property checks on the object it gives;
 * after a text delta, one of the same shape (`TextChunkTemplate`: the same
 * JSON but for its text) is read straight to its text.
 */
import type { ChatStreamEvent, StreamError } from "../../domain/chat.ts"
import { pushInto } from "../contract.ts"
import type { ChatEventSink, SinkStreamDecoder } from "../contract.ts"
import { JsonShapes } from "../json-shape.ts"
import { TextChunkTemplate } from "../text-chunk-template.ts"
import type { Hole } from "../text-chunk-template.ts"
import { trimmed } from "../event-data.ts"
import { statusOfAnthropicError } from "./error.ts"
import { isRecord, readUsageCounts, stopReasonOfWire, type UsageCounts, usageOfCounts } from "./mapping.ts"

export interface AnthropicStreamDecodeOptions {
  /** `created` for `message_start` (Messages has none; Unix seconds); default: when the decoder was made. */
  readonly created?: number | undefined
}

const MALFORMED: StreamError = { type: "api_error", message: "upstream sent a malformed stream event", status: 502, malformed: true }
const TRUNCATED: StreamError = { type: "api_error", message: "upstream stream ended before message_stop", status: 502, malformed: true }

/** Shapes learnt per stream at most: a stream whose text deltas keep changing shape is parsed. */
const MAX_TEMPLATES = 4

/**
 * The event shapes of the last streams (a model's message start, block
 * starts and stops, message delta and stop, pings): cut at the values that
 * differ from event to event and stream to stream (the message or tool id, a
 * delta's text, thinking, signature or partial JSON, and the integers: token
 * counts; a block's index stays). An error is not kept.
 */
const SHAPES = new JsonShapes(16, {
  strings: new Set(["id", "text", "thinking", "signature", "partial_json"]),
  fixedIntegers: new Set(["index"]),
  learns: (event) => event.type !== "error"
})

export const makeAnthropicStreamDecoder = (options: AnthropicStreamDecodeOptions = {}): SinkStreamDecoder => {
  const created = options.created ?? Math.floor(Date.now() / 1000)
  let finished = false
  let done = false
  let toolCount = 0
  const toolOfBlock = new Map<number, number>()
  let counts: UsageCounts | undefined

  const stop = (event: ChatStreamEvent, out: ChatEventSink): void => {
    done = true
    out.push(event)
  }

  const blockStart = (index: unknown, block: Record<string, unknown>, out: ChatEventSink): void => {
    if (block.type === "text") {
      if (typeof block.text === "string" && block.text !== "") out.push({ type: "text_delta", text: block.text })
      return
    }
    if (block.type === "thinking") {
      out.push({ type: "reasoning_delta", text: typeof block.thinking === "string" ? block.thinking : "" })
      return
    }
    if (block.type === "redacted_thinking" && typeof block.data === "string") {
      out.push({ type: "reasoning_redacted", data: block.data })
      return
    }
    if (block.type !== "tool_use") {
      if (typeof block.type === "string") out.push({ type: "other_content", kind: block.type })
      return
    }
    if (typeof index !== "number") return
    const tool = toolCount++
    toolOfBlock.set(index, tool)
    out.push({
      type: "tool_call_start",
      index: tool,
      id: typeof block.id === "string" ? block.id : "",
      name: typeof block.name === "string" ? block.name : ""
    })
    // Anthropic starts with `input: {}`; a provider that sends the whole input up front is honoured.
    if (isRecord(block.input) && Object.keys(block.input).length > 0) {
      out.push({ type: "tool_call_delta", index: tool, argumentsDelta: JSON.stringify(block.input) })
    }
  }

  const blockDelta = (index: unknown, delta: Record<string, unknown>, out: ChatEventSink): void => {
    if (delta.type === "text_delta") {
      if (typeof delta.text === "string" && delta.text !== "") out.push({ type: "text_delta", text: delta.text })
      return
    }
    if (delta.type === "thinking_delta") {
      if (typeof delta.thinking === "string" && delta.thinking !== "") out.push({ type: "reasoning_delta", text: delta.thinking })
      return
    }
    if (delta.type === "signature_delta") {
      if (typeof delta.signature === "string") out.push({ type: "reasoning_signature", signature: delta.signature })
      return
    }
    if (delta.type !== "input_json_delta" || typeof index !== "number") return
    const tool = toolOfBlock.get(index)
    const json = delta.partial_json
    if (tool !== undefined && typeof json === "string" && json !== "") out.push({ type: "tool_call_delta", index: tool, argumentsDelta: json })
  }

  const messageDelta = (message: Record<string, unknown>, out: ChatEventSink): void => {
    const delta = isRecord(message.delta) ? message.delta : undefined
    if (typeof delta?.stop_reason === "string" && !finished) {
      finished = true
      out.push({
        type: "message_delta",
        stopReason: stopReasonOfWire(delta.stop_reason),
        stopSequence: typeof delta.stop_sequence === "string" ? delta.stop_sequence : undefined
      })
    }
    if (isRecord(message.usage)) {
      counts = readUsageCounts(message.usage, counts)
      if (counts !== undefined) out.push({ type: "usage", usage: usageOfCounts(counts) })
    }
  }

  /** This stream's reading of its events: most match a shape learnt earlier (see JsonShape) and are not parsed. */
  const reader = SHAPES.reader()

  /** The shape of this stream's text deltas, once one was seen (see TextChunkTemplate). */
  let textDelta: TextChunkTemplate | undefined
  let learnt = 0

  const decodeInto = (data: string, name: string | undefined, out: ChatEventSink): void => {
    if (done) return
    const text = textDelta?.match(data, out.textRead !== false)
    if (text !== undefined) {
      if (text !== "") out.push({ type: "text_delta", text })
      return
    }
    if (trimmed(data) === "") return
    const message = reader.read(data)
    if (message === undefined) return stop({ type: "error", error: MALFORMED }, out)
    switch (typeof message.type === "string" ? message.type : name) {
      case "message_start": {
        const start = isRecord(message.message) ? message.message : {}
        counts = readUsageCounts(start.usage)
        out.push({
          type: "message_start",
          id: typeof start.id === "string" ? start.id : "",
          model: typeof start.model === "string" ? start.model : "",
          created,
          usage: counts === undefined ? undefined : usageOfCounts(counts)
        })
        return
      }
      case "content_block_start":
        if (isRecord(message.content_block)) blockStart(message.index, message.content_block, out)
        return
      case "content_block_delta":
        if (!isRecord(message.delta)) return
        blockDelta(message.index, message.delta, out)
        // A text delta's shape, learnt: one of its shape is a text delta whatever its text.
        if (message.type === "content_block_delta" && message.delta.type === "text_delta" && typeof message.delta.text === "string" && learnt < MAX_TEMPLATES) {
          learnt++
          const holes: ReadonlyArray<Hole> = [{ owner: message.delta, key: "text", kind: "text" }]
          textDelta = reader.matched?.textTemplate(data, holes) ?? TextChunkTemplate.learn(data, message, holes)
          // Not the compact serialization: the upstream's serializer differs, and will for every chunk.
          if (textDelta === undefined) learnt = MAX_TEMPLATES
        }
        return
      case "message_delta":
        return messageDelta(message, out)
      case "message_stop":
        return stop(finished ? { type: "message_stop" } : { type: "error", error: TRUNCATED }, out)
      case "error":
        return stop({ type: "error", error: streamError(message.error) }, out)
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

const streamError = (raw: unknown): StreamError => {
  const type = isRecord(raw) && typeof raw.type === "string" ? raw.type : "api_error"
  const message = isRecord(raw) && typeof raw.message === "string" ? raw.message : "upstream reported an error"
  return { type, message, status: statusOfAnthropicError(type) }
}
