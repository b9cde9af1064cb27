/**
 * Canonical stream events → Responses SSE events (docs/reference/openai-other.md §7.4).
 *
 * Every frame is `event: <type>\ndata: <json>\n\n`; the JSON repeats the type
 * and carries a `sequence_number` that grows by one per frame. The order is
 * the one the SDK accumulators (openai-node `ResponseAccumulator`) require:
 * `response.created`, `response.in_progress`; per output item
 * `output_item.added`, its content (`content_part.added` and
 * `output_text.delta`s for a message, `function_call_arguments.delta`s for a
 * call), its `….done` events and `output_item.done`; then, on `message_stop`,
 * `response.completed` (or `response.incomplete`) with the final Response
 * object, usage included. Items are opened and closed one at a time, each
 * with the next `output_index`.
 *
 * Details:
 * - Usage is held until `message_stop`, so the terminal event carries real
 *   counts whichever order the upstream reported finish and usage in.
 * - A `max_tokens`/`content_filter` finish ends with `response.incomplete`,
 *   as the API does; the SDK treats it like `response.completed`.
 * - An `error` event becomes an `error` frame and nothing follows it. So does
 *   a `message_stop` without a finish: a cut-off stream must not look complete.
 *   The frame has `code`/`message`/`param` at the top level (the SDK's
 *   `ResponseErrorEvent`) and the same inside `error`, the shape the API
 *   actually sends and the only one on which openai-node and openai-python
 *   throw (they test `data.error`).
 *
 * Gotchas:
 * - Interleaved tool calls. Output items cannot interleave. A tool call that
 *   starts while another is open is held back whole and sent, in start order,
 *   when text or the finish closes the open item. A fragment for a call that is
 *   already closed only reaches the final Response object.
 * - Hot path: per-delta frames are string templates around pre-serialized item
 *   references; only the delta itself goes through `JSON.stringify`.
 */
import type { ChatStreamEvent, StreamError, Usage } from "../../domain/chat.ts"
import { openAiTypeAndCode } from "../../domain/envelope.ts"
import { classifyStreamError } from "../../domain/errors.ts"
import type { StreamEncoder } from "../contract.ts"
import { functionCallItemId, messageItemId, type Outcome, outcomeOf } from "./mapping.ts"
import {
  functionCallItem,
  messageItem,
  outputTextPart,
  requestEcho,
  responseObject,
  type ResponsesEncodeOptions
} from "./response.ts"

const TRUNCATED: StreamError = {
  type: "server_error",
  message: "upstream stream ended before a finish reason",
  status: 502
}

const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 }

type ItemStatus = "completed" | "incomplete"

interface OpenText {
  readonly kind: "text"
  readonly index: number
  readonly id: string
  /** `"item_id":…,"output_index":…`, serialized once. */
  readonly ref: string
  readonly chunks: Array<string>
}

interface OpenTool {
  readonly kind: "tool"
  readonly tool: number
  readonly index: number
  readonly id: string
  readonly ref: string
  readonly callId: string
  readonly name: string
  readonly chunks: Array<string>
}

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
  /** Output items by `output_index`: final once closed, a placeholder while open. */
  const output: Array<Record<string, unknown>> = []
  let open: OpenText | OpenTool | undefined
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

  const openText = (): string => {
    const index = output.length
    const itemId = messageItemId(id, index)
    const ref = `"item_id":${JSON.stringify(itemId)},"output_index":${index}`
    open = { kind: "text", index, id: itemId, ref, chunks: [] }
    return itemAdded(index, messageItem(itemId, undefined, "in_progress")) +
      emit("response.content_part.added", `${ref},"content_index":0,"part":${JSON.stringify(outputTextPart(""))}`)
  }

  const openTool = (tool: number, callId: string, name: string): OpenTool => {
    const index = output.length
    const itemId = functionCallItemId(id, index)
    const ref = `"item_id":${JSON.stringify(itemId)},"output_index":${index}`
    const item: OpenTool = { kind: "tool", tool, index, id: itemId, ref, callId, name, chunks: [] }
    open = item
    return item
  }

  const toolAdded = (item: OpenTool): string =>
    itemAdded(item.index, functionCallItem(item.id, item.callId, item.name, "", "in_progress"))

  const argumentsDelta = (item: OpenTool, delta: string): string => {
    item.chunks.push(delta)
    return emit("response.function_call_arguments.delta", `${item.ref},"delta":${JSON.stringify(delta)}`)
  }

  const close = (status: ItemStatus): string => {
    const item = open!
    open = undefined
    const text = item.chunks.join("")
    if (item.kind === "text") {
      const part = `${item.ref},"content_index":0`
      return emit("response.output_text.done", `${part},"text":${JSON.stringify(text)},"logprobs":[]`) +
        emit("response.content_part.done", `${part},"part":${JSON.stringify(outputTextPart(text))}`) +
        itemDone(item.index, messageItem(item.id, text, status))
    }
    closedTools.set(item.tool, item.index)
    return emit(
      "response.function_call_arguments.done",
      `${item.ref},"name":${JSON.stringify(item.name)},"arguments":${JSON.stringify(text)}`
    ) + itemDone(item.index, functionCallItem(item.id, item.callId, item.name, text, status))
  }

  /** Closes the open item and sends the held tool calls whole; the very last item gets `last`. */
  const settle = (last: ItemStatus): string => {
    let out = open === undefined ? "" : close(held.size === 0 ? last : "completed")
    let remaining = held.size
    for (const [tool, call] of held) {
      const item = openTool(tool, call.id, call.name)
      out += toolAdded(item)
      if (call.chunks.length > 0) out += argumentsDelta(item, call.chunks.join(""))
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
      case "text_delta": {
        if (event.text === "" || outcome !== undefined) return ""
        const out = open?.kind === "text" ? "" : settle("completed") + openText()
        const text = open as OpenText
        text.chunks.push(event.text)
        return out + emit(
          "response.output_text.delta",
          `${text.ref},"content_index":0,"delta":${JSON.stringify(event.text)},"logprobs":[]`
        )
      }
      case "tool_call_start":
        if (outcome !== undefined || closedTools.has(event.index)) return ""
        if (open?.kind === "tool") {
          if (open.tool !== event.index && !held.has(event.index)) {
            held.set(event.index, { id: event.id, name: event.name, chunks: [] })
          }
          return ""
        }
        return (open === undefined ? "" : close("completed")) + toolAdded(openTool(event.index, event.id, event.name))
      case "tool_call_delta": {
        if (event.argumentsDelta === "") return ""
        if (open?.kind === "tool" && open.tool === event.index) return argumentsDelta(open, event.argumentsDelta)
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
        outcome = outcomeOf(event.stopReason)
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
