/**
 * Canonical stream events → Messages SSE frames (docs/reference/translation.md §10).
 *
 * Every frame is `event: <type>\ndata: <json>\n\n` (SDKs ignore unnamed events).
 * `message_start`, then content blocks with their own indexes (text and
 * tool_use blocks opened, filled and closed in order), then `message_delta`
 * (stop reason and usage), then `message_stop`.
 *
 * Details:
 * - The finish is held until usage arrives (OpenAI reports usage after the
 *   finish) or until `message_stop`, so `message_delta` carries real counts.
 * - An `error` event becomes `event: error` and nothing follows it. A
 *   `message_stop` without a finish means the stream was cut off: it becomes
 *   an error too, never a normal stop.
 *
 * Gotchas:
 * - Interleaved tool calls. An OpenAI-compatible upstream may interleave the
 *   argument fragments of several tool calls, and Anthropic blocks cannot
 *   interleave. The first tool call streams live; a tool call that starts
 *   while another tool block is open is held back whole (start, arguments)
 *   and sent as complete blocks, in start order, when text or the finish
 *   closes the open block. Fragments for the open call keep flowing to it.
 *   Sequential calls (what OpenAI sends) therefore arrive intact, the later
 *   ones as one block each at the finish.
 * - Tool ids are cleaned to `[a-zA-Z0-9_-]` (`cleanToolId`).
 */
import type { ChatStreamEvent, StopReason, StreamError, Usage } from "../../domain/chat.ts"
import { streamErrorFrame } from "../../domain/envelope.ts"
import { classifyStreamError } from "../../domain/errors.ts"
import type { StreamEncoder } from "../contract.ts"
import { cleanToolId, encodeUsage, messageId, wireStopReason } from "./mapping.ts"

export interface AnthropicStreamEncodeOptions {
  /** Model name to show the caller instead of the upstream's. */
  readonly model?: string | undefined
}

const TRUNCATED: StreamError = { type: "api_error", message: "upstream stream ended before a stop reason", status: 502 }

const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 }

const frame = (type: string, json: string): string => `event: ${type}\ndata: ${json}\n\n`

const errorFrame = (error: StreamError): string =>
  streamErrorFrame("anthropic", classifyStreamError(error), error.message, error.status ?? 500)

type OpenBlock =
  | { readonly kind: "text"; readonly index: number }
  | { readonly kind: "tool"; readonly index: number; readonly tool: number }

interface HeldToolCall {
  readonly id: string
  readonly name: string
  readonly args: Array<string>
}

export const makeAnthropicStreamEncoder = (options: AnthropicStreamEncodeOptions = {}): StreamEncoder => {
  let started = false
  let done = false
  let open: OpenBlock | undefined
  let nextIndex = 0
  const held = new Map<number, HeldToolCall>()
  let stop: { readonly reason: StopReason; readonly sequence: string | undefined } | undefined
  let stopSent = false
  let startUsage: Usage | undefined
  let usage: Usage | undefined

  const messageStart = (id: string, model: string, known: Usage | undefined): string => {
    started = true
    startUsage = known
    const message = {
      id: messageId(id),
      type: "message",
      role: "assistant",
      model: options.model ?? model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: known === undefined ? { input_tokens: 0, output_tokens: 0 } : encodeUsage(known)
    }
    return frame("message_start", `{"type":"message_start","message":${JSON.stringify(message)}}`)
  }

  const closeOpen = (): string => {
    if (open === undefined) return ""
    const index = open.index
    open = undefined
    return frame("content_block_stop", `{"type":"content_block_stop","index":${index}}`)
  }

  const startBlock = (block: string): string => {
    const index = nextIndex++
    return frame("content_block_start", `{"type":"content_block_start","index":${index},"content_block":${block}}`)
  }

  const toolBlock = (id: string, name: string): string =>
    `{"type":"tool_use","id":${JSON.stringify(cleanToolId(id))},"name":${JSON.stringify(name)},"input":{}}`

  const inputDelta = (index: number, json: string): string =>
    frame(
      "content_block_delta",
      `{"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":${
        JSON.stringify(json)
      }}}`
    )

  const openTool = (tool: number, id: string, name: string): string => {
    const index = nextIndex
    const out = startBlock(toolBlock(id, name))
    open = { kind: "tool", index, tool }
    return out
  }

  /** Closes the open block and sends the held tool calls as complete blocks. */
  const settleBlocks = (): string => {
    let out = closeOpen()
    for (const [tool, call] of held) {
      out += openTool(tool, call.id, call.name)
      if (call.args.length > 0) out += inputDelta(open!.index, call.args.join(""))
      out += closeOpen()
    }
    held.clear()
    return out
  }

  const messageDelta = (): string => {
    stopSent = true
    const json = `{"type":"message_delta","delta":${
      JSON.stringify({ stop_reason: wireStopReason(stop!.reason), stop_sequence: stop!.sequence ?? null })
    },"usage":${JSON.stringify(encodeUsage(usage ?? startUsage ?? ZERO_USAGE))}}`
    return frame("message_delta", json)
  }

  const end = (out: string): string => {
    done = true
    return out
  }

  const body = (event: Exclude<ChatStreamEvent, { type: "message_start" }>): string => {
    switch (event.type) {
      case "text_delta": {
        if (event.text === "") return ""
        let out = ""
        if (open?.kind !== "text") {
          out = settleBlocks()
          const index = nextIndex
          out += startBlock(`{"type":"text","text":""}`)
          open = { kind: "text", index }
        }
        return out + frame(
          "content_block_delta",
          `{"type":"content_block_delta","index":${open.index},"delta":{"type":"text_delta","text":${
            JSON.stringify(event.text)
          }}}`
        )
      }
      case "tool_call_start":
        if (open?.kind === "tool" || held.size > 0) {
          if (open?.kind !== "tool" || open.tool !== event.index) {
            if (!held.has(event.index)) held.set(event.index, { id: event.id, name: event.name, args: [] })
          }
          return ""
        }
        return closeOpen() + openTool(event.index, event.id, event.name)
      case "tool_call_delta": {
        if (event.argumentsDelta === "") return ""
        if (open?.kind === "tool" && open.tool === event.index) return inputDelta(open.index, event.argumentsDelta)
        held.get(event.index)?.args.push(event.argumentsDelta)
        return ""
      }
      case "message_delta": {
        if (stop !== undefined) return ""
        stop = { reason: event.stopReason, sequence: event.stopSequence }
        const out = settleBlocks()
        return usage === undefined ? out : out + messageDelta()
      }
      case "other_content":
      case "reasoning_delta":
      case "reasoning_signature":
      case "reasoning_redacted":
        return ""
      case "usage":
        usage = event.usage
        return stop !== undefined && !stopSent ? messageDelta() : ""
      case "message_stop":
        if (stop === undefined) return end(errorFrame(TRUNCATED))
        return end(
          (stopSent ? "" : messageDelta()) + frame("message_stop", `{"type":"message_stop"}`)
        )
      case "error":
        return end(errorFrame(event.error))
    }
  }

  return {
    push(event: ChatStreamEvent): string {
      if (done) return ""
      if (event.type === "message_start") return started ? "" : messageStart(event.id, event.model, event.usage)
      if (event.type === "error") return end(errorFrame(event.error))
      // An upstream that skipped its opening event still gets a well-formed stream.
      const head = started ? "" : messageStart("", "", undefined)
      return head + body(event)
    }
  }
}
