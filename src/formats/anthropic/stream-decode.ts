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
 * name. Hot path: `JSON.parse` and property checks only.
 */
import type { ChatStreamEvent, StreamError } from "../../domain/chat.ts"
import type { SseEvent, StreamDecoder } from "../contract.ts"
import { statusOfAnthropicError } from "./error.ts"
import { isRecord, readUsageCounts, stopReasonOfWire, type UsageCounts, usageOfCounts } from "./mapping.ts"

export interface AnthropicStreamDecodeOptions {
  /** `created` for `message_start` (Messages has none; Unix seconds); default: when the decoder was made. */
  readonly created?: number | undefined
}

const MALFORMED: StreamError = { type: "api_error", message: "upstream sent a malformed stream event", status: 502, malformed: true }
const TRUNCATED: StreamError = { type: "api_error", message: "upstream stream ended before message_stop", status: 502, malformed: true }

export const makeAnthropicStreamDecoder = (options: AnthropicStreamDecodeOptions = {}): StreamDecoder => {
  const created = options.created ?? Math.floor(Date.now() / 1000)
  let finished = false
  let done = false
  let toolCount = 0
  const toolOfBlock = new Map<number, number>()
  let counts: UsageCounts | undefined

  const stop = (event: ChatStreamEvent): ReadonlyArray<ChatStreamEvent> => {
    done = true
    return [event]
  }

  const blockStart = (index: unknown, block: Record<string, unknown>): ReadonlyArray<ChatStreamEvent> => {
    if (block.type === "text") {
      return typeof block.text === "string" && block.text !== "" ? [{ type: "text_delta", text: block.text }] : []
    }
    if (block.type === "thinking") {
      return [{ type: "reasoning_delta", text: typeof block.thinking === "string" ? block.thinking : "" }]
    }
    if (block.type === "redacted_thinking" && typeof block.data === "string") {
      return [{ type: "reasoning_redacted", data: block.data }]
    }
    if (block.type !== "tool_use") return typeof block.type === "string" ? [{ type: "other_content", kind: block.type }] : []
    if (typeof index !== "number") return []
    const tool = toolCount++
    toolOfBlock.set(index, tool)
    const start: ChatStreamEvent = {
      type: "tool_call_start",
      index: tool,
      id: typeof block.id === "string" ? block.id : "",
      name: typeof block.name === "string" ? block.name : ""
    }
    // Anthropic starts with `input: {}`; a provider that sends the whole input up front is honoured.
    if (isRecord(block.input) && Object.keys(block.input).length > 0) {
      return [start, { type: "tool_call_delta", index: tool, argumentsDelta: JSON.stringify(block.input) }]
    }
    return [start]
  }

  const blockDelta = (index: unknown, delta: Record<string, unknown>): ReadonlyArray<ChatStreamEvent> => {
    if (delta.type === "text_delta") {
      return typeof delta.text === "string" && delta.text !== "" ? [{ type: "text_delta", text: delta.text }] : []
    }
    if (delta.type === "thinking_delta") {
      return typeof delta.thinking === "string" && delta.thinking !== "" ? [{ type: "reasoning_delta", text: delta.thinking }] : []
    }
    if (delta.type === "signature_delta") {
      return typeof delta.signature === "string" ? [{ type: "reasoning_signature", signature: delta.signature }] : []
    }
    if (delta.type !== "input_json_delta" || typeof index !== "number") return []
    const tool = toolOfBlock.get(index)
    const json = delta.partial_json
    return tool !== undefined && typeof json === "string" && json !== ""
      ? [{ type: "tool_call_delta", index: tool, argumentsDelta: json }]
      : []
  }

  const messageDelta = (message: Record<string, unknown>): ReadonlyArray<ChatStreamEvent> => {
    const out: Array<ChatStreamEvent> = []
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
    return out
  }

  return {
    push(event: SseEvent): ReadonlyArray<ChatStreamEvent> {
      if (done) return []
      if (event.data.trim() === "") return []
      let message: unknown
      try {
        message = JSON.parse(event.data)
      } catch {
        return stop({ type: "error", error: MALFORMED })
      }
      if (!isRecord(message)) return stop({ type: "error", error: MALFORMED })
      switch (typeof message.type === "string" ? message.type : event.event) {
        case "message_start": {
          const start = isRecord(message.message) ? message.message : {}
          counts = readUsageCounts(start.usage)
          return [{
            type: "message_start",
            id: typeof start.id === "string" ? start.id : "",
            model: typeof start.model === "string" ? start.model : "",
            created,
            usage: counts === undefined ? undefined : usageOfCounts(counts)
          }]
        }
        case "content_block_start":
          return isRecord(message.content_block) ? blockStart(message.index, message.content_block) : []
        case "content_block_delta":
          return isRecord(message.delta) ? blockDelta(message.index, message.delta) : []
        case "message_delta":
          return messageDelta(message)
        case "message_stop":
          return stop(finished ? { type: "message_stop" } : { type: "error", error: TRUNCATED })
        case "error":
          return stop({ type: "error", error: streamError(message.error) })
        default:
          return []
      }
    },
    end(): ReadonlyArray<ChatStreamEvent> {
      return done ? [] : stop({ type: "error", error: TRUNCATED })
    }
  }
}

const streamError = (raw: unknown): StreamError => {
  const type = isRecord(raw) && typeof raw.type === "string" ? raw.type : "api_error"
  const message = isRecord(raw) && typeof raw.message === "string" ? raw.message : "upstream reported an error"
  return { type, message, status: statusOfAnthropicError(type) }
}
