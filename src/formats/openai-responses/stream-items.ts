/**
 * The frames of each kind of Responses output item, from `output_item.added`
 * to `output_item.done`. The stream encoder (stream-encode.ts) owns what lies
 * around them: sequence numbers, the response's lifecycle, which item is open,
 * item order and held tool calls.
 *
 * - `message`: content parts, each `output_text` or `refusal`. Per part
 *   `content_part.added`, `output_text.delta`s or `refusal.delta`s,
 *   `output_text.done` or `refusal.done`, `content_part.done`; a switch between
 *   text and refusal closes one part and opens the next.
 * - `reasoning`: the summary part opens with the first text
 *   (`reasoning_summary_part.added`, `reasoning_summary_text.delta`s, their
 *   `….done`s), so thinking with none (redacted or withheld) has no summary
 *   events. `encrypted_content` (a signature, or redacted thinking's marked
 *   data) comes last, so it is only in `output_item.done`.
 * - `function_call`: `function_call_arguments.delta`s and `.done`.
 *
 * Hot path: per-delta frames are string templates around the item's
 * pre-serialized `ref`; only the delta itself goes through `JSON.stringify`.
 */
import { contentPart, functionCallItem, messageItem, reasoningItem } from "./response.ts"

export type ItemStatus = "completed" | "incomplete"

/** Where an item's frames go; the encoder keeps the response's `output` in step. */
export interface ItemFrames {
  /** One frame of `type` with the next sequence number. */
  readonly emit: (type: string, fields: string) => string
  /** `output_item.added`: `item` is at `output_index` `index` until it is done. */
  readonly itemAdded: (index: number, item: Record<string, unknown>) => string
  /** `output_item.done`: `item` is final at `output_index` `index`. */
  readonly itemDone: (index: number, item: Record<string, unknown>) => string
}

interface OpenItem {
  readonly index: number
  readonly id: string
  /** `"item_id":…,"output_index":…`, serialized once. */
  readonly ref: string
}

/** The identity of an item that opens at `index`. */
export const openItem = (id: string, index: number): OpenItem => ({
  index,
  id,
  ref: `"item_id":${JSON.stringify(id)},"output_index":${index}`
})

/** One content part of the open message item: text or refusal. */
interface OpenPart {
  readonly refusal: boolean
  /** The item's `ref` plus `"content_index":…`. */
  readonly ref: string
  readonly chunks: Array<string>
}

export interface OpenText extends OpenItem {
  readonly kind: "text"
  readonly parts: Array<OpenPart>
}

export interface OpenReasoning extends OpenItem {
  readonly kind: "reasoning"
  /** `ref` with its one summary part's index, pre-serialized like `ref`. */
  readonly summaryRef: string
  readonly chunks: Array<string>
  /** The signature, or redacted thinking's marked data; once set, the item takes no more text. */
  encryptedContent: string | undefined
}

export interface OpenTool extends OpenItem {
  readonly kind: "tool"
  /** The call's index among tool calls (canonical `tool_call_start.index`). */
  readonly tool: number
  readonly callId: string
  readonly name: string
  readonly chunks: Array<string>
}

export type OpenOutputItem = OpenText | OpenReasoning | OpenTool

/** Adds the message item with a first part of the given kind. */
export const startMessage = (frames: ItemFrames, item: OpenText, refusal: boolean): string =>
  frames.itemAdded(item.index, messageItem(item.id, [], "in_progress")) + openPart(frames, item, refusal)

const openPart = (frames: ItemFrames, item: OpenText, refusal: boolean): string => {
  const ref = `${item.ref},"content_index":${item.parts.length}`
  item.parts.push({ refusal, ref, chunks: [] })
  return frames.emit("response.content_part.added", `${ref},"part":${JSON.stringify(contentPart("", refusal))}`)
}

const closePart = (frames: ItemFrames, part: OpenPart): string => {
  const text = part.chunks.join("")
  const done = part.refusal
    ? frames.emit("response.refusal.done", `${part.ref},"refusal":${JSON.stringify(text)}`)
    : frames.emit("response.output_text.done", `${part.ref},"text":${JSON.stringify(text)},"logprobs":[]`)
  return done + frames.emit("response.content_part.done", `${part.ref},"part":${JSON.stringify(contentPart(text, part.refusal))}`)
}

/** Text (or refusal text) into the message item; a change of kind starts the next part. */
export const messageDelta = (frames: ItemFrames, item: OpenText, text: string, refusal: boolean): string => {
  let out = ""
  let part = item.parts.at(-1)!
  if (part.refusal !== refusal) {
    out = closePart(frames, part) + openPart(frames, item, refusal)
    part = item.parts.at(-1)!
  }
  part.chunks.push(text)
  return out + (refusal
    ? frames.emit("response.refusal.delta", `${part.ref},"delta":${JSON.stringify(text)}`)
    : frames.emit("response.output_text.delta", `${part.ref},"delta":${JSON.stringify(text)},"logprobs":[]`))
}

export const startReasoning = (frames: ItemFrames, item: OpenReasoning): string =>
  frames.itemAdded(item.index, reasoningItem(item.id, "", null))

/** Thinking text into the reasoning item's summary. */
export const summaryDelta = (frames: ItemFrames, item: OpenReasoning, text: string): string => {
  if (text === "") return ""
  const ref = item.summaryRef
  const added = item.chunks.length === 0
    ? frames.emit("response.reasoning_summary_part.added", `${ref},"part":{"type":"summary_text","text":""}`)
    : ""
  item.chunks.push(text)
  return added + frames.emit("response.reasoning_summary_text.delta", `${ref},"delta":${JSON.stringify(text)}`)
}

export const startFunctionCall = (frames: ItemFrames, item: OpenTool): string =>
  frames.itemAdded(item.index, functionCallItem(item.id, item.callId, item.name, "", "in_progress"))

export const argumentsDelta = (frames: ItemFrames, item: OpenTool, delta: string): string => {
  item.chunks.push(delta)
  return frames.emit("response.function_call_arguments.delta", `${item.ref},"delta":${JSON.stringify(delta)}`)
}

/** The item's closing frames, `output_item.done` last. */
export const closeItem = (frames: ItemFrames, item: OpenOutputItem, status: ItemStatus): string => {
  if (item.kind === "text") {
    const content = item.parts.map((part) => contentPart(part.chunks.join(""), part.refusal))
    return closePart(frames, item.parts.at(-1)!) + frames.itemDone(item.index, messageItem(item.id, content, status))
  }
  const text = item.chunks.join("")
  if (item.kind === "reasoning") {
    const ref = item.summaryRef
    const summary = text === ""
      ? ""
      : frames.emit("response.reasoning_summary_text.done", `${ref},"text":${JSON.stringify(text)}`) +
        frames.emit("response.reasoning_summary_part.done", `${ref},"part":{"type":"summary_text","text":${JSON.stringify(text)}}`)
    const done = reasoningItem(item.id, text, item.encryptedContent ?? null)
    if (status === "incomplete") done.status = status
    return summary + frames.itemDone(item.index, done)
  }
  return frames.emit(
    "response.function_call_arguments.done",
    `${item.ref},"name":${JSON.stringify(item.name)},"arguments":${JSON.stringify(text)}`
  ) + frames.itemDone(item.index, functionCallItem(item.id, item.callId, item.name, text, status))
}
