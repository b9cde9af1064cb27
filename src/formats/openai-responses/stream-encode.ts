/**
 * Canonical stream events → Responses SSE events (docs/reference/openai-other.md §7.4).
 *
 * Every frame is `event: <type>\ndata: <json>\n\n`; the JSON repeats the type
 * and carries a `sequence_number` that grows by one per frame. The order is
 * the one the SDK accumulators (openai-node `ResponseAccumulator`) require:
 * `response.created`, `response.in_progress`; per output item
 * `output_item.added`, its content (per part `content_part.added` and
 * `output_text.delta`s or `refusal.delta`s for a message,
 * `function_call_arguments.delta`s for a call, `reasoning_summary_part.added`
 * and `reasoning_summary_text.delta`s for reasoning), its `….done` events and
 * `output_item.done`; then, on `message_stop`,
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
 *
 * - Refusal text is a `refusal` part of the message item; a switch between
 *   text and refusal closes one part and opens the next.
 * - A reasoning item's signature (Anthropic's, as `encrypted_content`) comes
 *   last, so it is only in `output_item.done` and the final Response object;
 *   so is redacted thinking's data, an item with no summary events.
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
import {
  functionCallItemId,
  messageItemId,
  type Outcome,
  outcomeOf,
  reasoningItemId,
  redactedThinkingContent
} from "./mapping.ts"
import {
  contentPart,
  functionCallItem,
  messageItem,
  reasoningItem,
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

/** One content part of the open message item: text or refusal. */
interface OpenPart {
  readonly refusal: boolean
  /** The item's `ref` plus `"content_index":…`. */
  readonly ref: string
  readonly chunks: Array<string>
}

interface OpenText {
  readonly kind: "text"
  readonly index: number
  readonly id: string
  /** `"item_id":…,"output_index":…`, serialized once. */
  readonly ref: string
  readonly parts: Array<OpenPart>
}

interface OpenReasoning {
  readonly kind: "reasoning"
  readonly index: number
  readonly id: string
  readonly ref: string
  readonly chunks: Array<string>
  /** The signature, or redacted thinking's marked data; once set, the item takes no more text. */
  encryptedContent: string | undefined
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
  /** A refusal part was sent: the answer is a refusal (see `outcomeOf`). */
  let refused = false
  /** Output items by `output_index`: final once closed, a placeholder while open. */
  const output: Array<Record<string, unknown>> = []
  let open: OpenText | OpenTool | OpenReasoning | undefined
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

  const openText = (refusal: boolean): string => {
    const index = output.length
    const itemId = messageItemId(id, index)
    const ref = `"item_id":${JSON.stringify(itemId)},"output_index":${index}`
    const item: OpenText = { kind: "text", index, id: itemId, ref, parts: [] }
    open = item
    return itemAdded(index, messageItem(itemId, [], "in_progress")) + openPart(item, refusal)
  }

  const openPart = (item: OpenText, refusal: boolean): string => {
    const ref = `${item.ref},"content_index":${item.parts.length}`
    item.parts.push({ refusal, ref, chunks: [] })
    return emit("response.content_part.added", `${ref},"part":${JSON.stringify(contentPart("", refusal))}`)
  }

  const closePart = (part: OpenPart): string => {
    const text = part.chunks.join("")
    const done = part.refusal
      ? emit("response.refusal.done", `${part.ref},"refusal":${JSON.stringify(text)}`)
      : emit("response.output_text.done", `${part.ref},"text":${JSON.stringify(text)},"logprobs":[]`)
    return done + emit("response.content_part.done", `${part.ref},"part":${JSON.stringify(contentPart(text, part.refusal))}`)
  }

  const textDelta = (text: string, refusal: boolean): string => {
    let out = ""
    if (open?.kind !== "text") out = settle("completed") + openText(refusal)
    const item = open as OpenText
    let part = item.parts.at(-1)!
    if (part.refusal !== refusal) {
      out += closePart(part) + openPart(item, refusal)
      part = item.parts.at(-1)!
    }
    part.chunks.push(text)
    refused ||= refusal
    return out + (refusal
      ? emit("response.refusal.delta", `${part.ref},"delta":${JSON.stringify(text)}`)
      : emit("response.output_text.delta", `${part.ref},"delta":${JSON.stringify(text)},"logprobs":[]`))
  }

  const openReasoning = (): OpenReasoning => {
    const index = output.length
    const itemId = reasoningItemId(id, index)
    const ref = `"item_id":${JSON.stringify(itemId)},"output_index":${index}`
    const item: OpenReasoning = { kind: "reasoning", index, id: itemId, ref, chunks: [], encryptedContent: undefined }
    open = item
    return item
  }

  /** A new reasoning item, after settling the open item. */
  const addReasoning = (): { readonly out: string; readonly item: OpenReasoning } => {
    const out = settle("completed")
    const item = openReasoning()
    return { out: out + itemAdded(item.index, reasoningItem(item.id, "", null)), item }
  }

  /** The open reasoning item still taking text (no signature yet), or a new one. */
  const reasoningTarget = (): { readonly out: string; readonly item: OpenReasoning } =>
    open?.kind === "reasoning" && open.encryptedContent === undefined ? { out: "", item: open } : addReasoning()

  const reasoningDelta = (text: string): string => {
    const { out, item } = reasoningTarget()
    if (text === "") return out
    const ref = `${item.ref},"summary_index":0`
    // The summary part opens with the first text: thinking with none has an empty summary.
    const added = item.chunks.length === 0
      ? emit("response.reasoning_summary_part.added", `${ref},"part":{"type":"summary_text","text":""}`)
      : ""
    item.chunks.push(text)
    return out + added + emit("response.reasoning_summary_text.delta", `${ref},"delta":${JSON.stringify(text)}`)
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
    if (item.kind === "text") {
      const content = item.parts.map((part) => contentPart(part.chunks.join(""), part.refusal))
      return closePart(item.parts.at(-1)!) + itemDone(item.index, messageItem(item.id, content, status))
    }
    const text = item.chunks.join("")
    if (item.kind === "reasoning") {
      const ref = `${item.ref},"summary_index":0`
      const summary = text === "" ? "" : emit("response.reasoning_summary_text.done", `${ref},"text":${JSON.stringify(text)}`) +
        emit("response.reasoning_summary_part.done", `${ref},"part":{"type":"summary_text","text":${JSON.stringify(text)}}`)
      const done = reasoningItem(item.id, text, item.encryptedContent ?? null)
      if (status === "incomplete") done.status = status
      return summary + itemDone(item.index, done)
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
      case "text_delta":
        if (event.text === "" || outcome !== undefined) return ""
        return textDelta(event.text, event.refusal === true)
      case "reasoning_delta":
        return outcome === undefined ? reasoningDelta(event.text) : ""
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
