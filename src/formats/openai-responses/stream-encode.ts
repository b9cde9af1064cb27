/**
 * Canonical stream events → Responses SSE events (docs/reference/openai-other.md §7.4).
 *
 * Every frame is `event: <type>\ndata: <json>\n\n`; the JSON repeats the type
 * and carries a `sequence_number` that grows by one per frame. The order is
 * the one the SDK accumulators (openai-node `ResponseAccumulator`) require:
 * `response.created`, `response.in_progress`; per output item
 * `output_item.added`, its content and `output_item.done` (the frames inside
 * each kind of item are in stream-items.ts); then, on `message_stop`,
 * `response.completed` (or `response.incomplete`) with the final Response
 * object, usage included. Items are opened and closed one at a time, each
 * with the next `output_index`.
 *
 * Details:
 * - Usage is held until `message_stop`, so the terminal event carries real
 *   counts whichever order the upstream reported finish and usage in.
 * - A `max_tokens`/`content_filter` finish ends with `response.incomplete`,
 *   as the API does; the SDK treats it like `response.completed`. A refusal
 *   ends with `response.completed` (see `outcomeOf`).
 * - An `error` event becomes an `error` frame and nothing follows it. So does
 *   a `message_stop` without a finish: a cut-off stream must not look complete.
 *   The frame has `code`/`message`/`param` at the top level (the SDK's
 *   `ResponseErrorEvent`) and the same inside `error`, the shape the API
 *   actually sends and the only one on which openai-node and openai-python
 *   throw (they test `data.error`).
 * - Text and refusal text go to one message item; thinking to a reasoning
 *   item, a new one after its signature; redacted thinking is a reasoning item
 *   of its own.
 *
 * Gotchas:
 * - Interleaved tool calls. Output items cannot interleave. A tool call that
 *   starts while another is open is held back whole and sent, in start order,
 *   when text or the finish closes the open item. A fragment for a call that is
 *   already closed only reaches the final Response object.
 */
import type { ChatStreamEvent, StreamError, Usage } from "../../domain/chat.ts"
import { openAiTypeAndCode } from "../../domain/envelope.ts"
import { classifyStreamError } from "../../domain/errors.ts"
import type { StreamEncoder } from "../contract.ts"
import {
  functionCallItemId,
  messageItemId,
  type Outcome,
  outcomeOf,
  reasoningItemId,
  redactedThinkingContent
} from "./mapping.ts"
import { requestEcho, responseObject, type ResponsesEncodeOptions } from "./response.ts"
import {
  argumentsDelta,
  closeItem,
  type ItemFrames,
  type ItemStatus,
  messageDelta,
  openItem,
  type OpenOutputItem,
  type OpenReasoning,
  type OpenText,
  type OpenTool,
  startFunctionCall,
  startMessage,
  startReasoning,
  summaryDelta
} from "./stream-items.ts"

const TRUNCATED: StreamError = {
  type: "server_error",
  message: "upstream stream ended before a finish reason",
  status: 502
}

const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 }

interface HeldToolCall {
  readonly id: string
  readonly name: string
  readonly chunks: Array<string>
}

export const makeResponsesStreamEncoder = (options: ResponsesEncodeOptions = {}): StreamEncoder => {
  const echo = requestEcho(options.request)
  let sequence = 0
  let started = false
  let done = false
  let id = ""
  let createdAt = Math.floor(Date.now() / 1000)
  let model = options.model ?? ""
  let startUsage: Usage | undefined
  let usage: Usage | undefined
  let outcome: Outcome | undefined
  /** A refusal part was sent: the answer is a refusal (see `outcomeOf`). */
  let refused = false
  /** Output items by `output_index`: final once closed, a placeholder while open. */
  const output: Array<Record<string, unknown>> = []
  let open: OpenOutputItem | undefined
  const held = new Map<number, HeldToolCall>()
  /** Tool index → `output_index` of calls already closed. */
  const closedTools = new Map<number, number>()

  const emit = (type: string, fields: string): string =>
    `event: ${type}\ndata: {"type":"${type}","sequence_number":${sequence++},${fields}}\n\n`

  const snapshot = (): string =>
    JSON.stringify(responseObject(
      outcome === undefined
        ? { id, createdAt, model, status: "in_progress", output: [], usage: undefined }
        : {
          id,
          createdAt,
          model,
          status: outcome.status,
          incompleteReason: outcome.incompleteReason,
          output,
          usage: usage ?? startUsage ?? ZERO_USAGE
        },
      echo
    ))

  const start = (): string => {
    started = true
    const response = `"response":${snapshot()}`
    return emit("response.created", response) + emit("response.in_progress", response)
  }

  const itemAdded = (index: number, item: Record<string, unknown>): string => {
    output.push(item)
    return emit("response.output_item.added", `"output_index":${index},"item":${JSON.stringify(item)}`)
  }

  const itemDone = (index: number, item: Record<string, unknown>): string => {
    output[index] = item
    return emit("response.output_item.done", `"output_index":${index},"item":${JSON.stringify(item)}`)
  }

  const frames: ItemFrames = { emit, itemAdded, itemDone }

  const textDelta = (text: string, refusal: boolean): string => {
    refused ||= refusal
    if (open?.kind === "text") return messageDelta(frames, open, text, refusal)
    const out = settle("completed")
    const item: OpenText = { kind: "text", ...openItem(messageItemId(id, output.length), output.length), parts: [] }
    open = item
    return out + startMessage(frames, item, refusal) + messageDelta(frames, item, text, refusal)
  }

  /** A new reasoning item, after settling the open item. */
  const addReasoning = (): { readonly out: string; readonly item: OpenReasoning } => {
    const out = settle("completed")
    const opened = openItem(reasoningItemId(id, output.length), output.length)
    const item: OpenReasoning = { kind: "reasoning", ...opened, summaryRef: `${opened.ref},"summary_index":0`, chunks: [], encryptedContent: undefined }
    open = item
    return { out: out + startReasoning(frames, item), item }
  }

  /** The open reasoning item still taking text (no signature yet), or a new one. */
  const reasoningTarget = (): { readonly out: string; readonly item: OpenReasoning } =>
    open?.kind === "reasoning" && open.encryptedContent === undefined ? { out: "", item: open } : addReasoning()

  /** Opens a function call item; the caller closes or settles what was open. */
  const openTool = (tool: number, callId: string, name: string): { readonly out: string; readonly item: OpenTool } => {
    const item: OpenTool = { kind: "tool", ...openItem(functionCallItemId(id, output.length), output.length), tool, callId, name, chunks: [] }
    open = item
    return { out: startFunctionCall(frames, item), item }
  }

  const close = (status: ItemStatus): string => {
    const item = open!
    open = undefined
    if (item.kind === "tool") closedTools.set(item.tool, item.index)
    return closeItem(frames, item, status)
  }

  /** Closes the open item and sends the held tool calls whole; the very last item gets `last`. */
  const settle = (last: ItemStatus): string => {
    let out = open === undefined ? "" : close(held.size === 0 ? last : "completed")
    let remaining = held.size
    for (const [tool, call] of held) {
      const { out: added, item } = openTool(tool, call.id, call.name)
      out += added
      if (call.chunks.length > 0) out += argumentsDelta(frames, item, call.chunks.join(""))
      out += close(--remaining === 0 ? last : "completed")
    }
    held.clear()
    return out
  }

  const errorFrame = (error: StreamError): string => {
    done = true
    const [type, code] = openAiTypeAndCode(classifyStreamError(error))
    const fields = `"code":"${code}","message":${JSON.stringify(error.message)},"param":null`
    return emit("error", `${fields},"error":{"type":"${type}",${fields}}`)
  }

  const body = (event: Exclude<ChatStreamEvent, { type: "message_start" | "error" }>): string => {
    switch (event.type) {
      case "text_delta":
        if (event.text === "" || outcome !== undefined) return ""
        return textDelta(event.text, event.refusal === true)
      case "reasoning_delta": {
        if (outcome !== undefined) return ""
        const { out, item } = reasoningTarget()
        return out + summaryDelta(frames, item, event.text)
      }
      case "reasoning_signature": {
        if (outcome !== undefined) return ""
        const { out, item } = reasoningTarget()
        item.encryptedContent = event.signature
        return out
      }
      case "reasoning_redacted": {
        if (outcome !== undefined) return ""
        const { out, item } = addReasoning()
        item.encryptedContent = redactedThinkingContent(event.data)
        return out
      }
      case "tool_call_start":
        if (outcome !== undefined || closedTools.has(event.index)) return ""
        if (open?.kind === "tool") {
          if (open.tool !== event.index && !held.has(event.index)) {
            held.set(event.index, { id: event.id, name: event.name, chunks: [] })
          }
          return ""
        }
        return (open === undefined ? "" : close("completed")) + openTool(event.index, event.id, event.name).out
      case "tool_call_delta": {
        if (event.argumentsDelta === "") return ""
        if (open?.kind === "tool" && open.tool === event.index) return argumentsDelta(frames, open, event.argumentsDelta)
        const heldCall = held.get(event.index)
        if (heldCall !== undefined) {
          heldCall.chunks.push(event.argumentsDelta)
          return ""
        }
        const closed = closedTools.get(event.index)
        if (closed !== undefined) output[closed].arguments += event.argumentsDelta
        return ""
      }
      case "message_delta":
        if (outcome !== undefined) return ""
        outcome = outcomeOf(event.stopReason, refused)
        return settle(outcome.status)
      case "other_content":
        return ""
      case "usage":
        usage = event.usage
        return ""
      case "message_stop":
        if (outcome === undefined) return errorFrame(TRUNCATED)
        done = true
        return emit(
          outcome.status === "completed" ? "response.completed" : "response.incomplete",
          `"response":${snapshot()}`
        )
    }
  }

  return {
    push(event: ChatStreamEvent): string {
      if (done) return ""
      if (event.type === "error") return errorFrame(event.error)
      if (event.type === "message_start") {
        if (started) return ""
        id = event.id
        createdAt = event.created
        model = options.model ?? event.model
        startUsage = event.usage
        return start()
      }
      // An upstream that skipped its opening event still gets a well-formed stream.
      return (started ? "" : start()) + body(event)
    }
  }
}
