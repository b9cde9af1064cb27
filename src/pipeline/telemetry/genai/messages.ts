/**
 * Captured content in the GenAI conventions' JSON forms (gen-ai-input-messages,
 * gen-ai-output-messages, gen-ai-system-instructions): every message is
 * `{role, parts}`, a part is `{type: "text", content}`, `{type: "tool_call",
 * id, name, arguments}`, `{type: "tool_call_response", id, response}`,
 * `{type: "reasoning", content}`, `uri` or `blob`. Built from the canonical request and response only, so the fast
 * and normalized paths capture the same JSON.
 *
 * Each attribute is capped at 64 KB of UTF-8 JSON: strings are shortened
 * (keeping the structure valid) and, if that is not enough, the oldest input
 * messages are left out.
 *
 * Details
 * - Inline media bytes (base64 images and documents) are never recorded: a
 *   `blob` part carries its modality and MIME type only. They would fill the
 *   cap on their own and say nothing a reader of a trace needs.
 * - Tool results (canonical: parts of a user message) become `tool` messages,
 *   as the conventions have them.
 */
import type { ChatRequest, ContentPart, MediaSource, StopReason, TextPart, ToolCallPart } from "../../../domain/index.ts"
import { finishReasonOf } from "./attributes.ts"

const CONTENT_CAP_BYTES = 64 * 1024

export type Part = Readonly<Record<string, unknown>>

export interface GenAiMessage {
  readonly role: string
  readonly parts: ReadonlyArray<Part>
  readonly finish_reason?: string
}

/** Tool-call arguments as the object the model produced, or the raw text when it is not JSON. */
const argumentsOf = (text: string): unknown => {
  if (text === "") return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const mediaPart = (source: MediaSource, modality: string): Part =>
  source.kind === "url"
    ? { type: "uri", modality, uri: source.url }
    : { type: "blob", modality, mime_type: source.mediaType }

const textPart = (part: TextPart): Part => ({ type: "text", content: part.text })

const toolCallPart = (part: ToolCallPart): Part => ({ type: "tool_call", id: part.id, name: part.name, arguments: argumentsOf(part.arguments) })

const partOf = (part: Exclude<ContentPart, { type: "tool_result" }>): Part => {
  switch (part.type) {
    case "text":
      return textPart(part)
    case "image":
      return mediaPart(part.source, "image")
    case "document":
      return mediaPart(part.source, "document")
    case "tool_call":
      return toolCallPart(part)
    case "reasoning":
      return { type: "reasoning", content: part.text }
  }
}

/** The request's messages in order; a run of tool results is its own `tool` message. */
export const inputMessagesOf = (request: ChatRequest): Array<GenAiMessage> => {
  const out: Array<GenAiMessage> = []
  for (const message of request.messages) {
    let parts: Array<Part> = []
    let role: string = message.role
    const flush = () => {
      if (parts.length > 0) out.push({ role, parts })
      parts = []
    }
    for (const part of message.content) {
      const nextRole = part.type === "tool_result" ? "tool" : message.role
      if (nextRole !== role) {
        flush()
        role = nextRole
      }
      if (part.type === "tool_result") {
        const texts = part.content.every((item) => item.type === "text")
        parts.push({
          type: "tool_call_response",
          id: part.toolCallId,
          response: texts
            ? part.content.map((item) => (item as TextPart).text).join("")
            : part.content.map((item) => (item.type === "text" ? textPart(item) : mediaPart(item.source, "image")))
        })
      } else {
        parts.push(partOf(part))
      }
    }
    flush()
  }
  return out
}

export const systemInstructionsOf = (request: ChatRequest): ReadonlyArray<Part> => request.system.map(textPart)

/** What the answer said, for `gen_ai.output.messages`. */
export interface OutputContent {
  readonly text?: string | undefined
  readonly toolCalls?: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }> | undefined
  readonly stopReason?: StopReason | undefined
  /** The call failed (or its stream broke): the finish reason is `error`. */
  readonly failed?: boolean | undefined
}

export const outputMessagesOf = (output: OutputContent): Array<GenAiMessage> => {
  const parts: Array<Part> = []
  if (output.text !== undefined && output.text !== "") parts.push({ type: "text", content: output.text })
  for (const call of output.toolCalls ?? []) parts.push({ type: "tool_call", id: call.id, name: call.name, arguments: argumentsOf(call.arguments) })
  const finish = output.failed === true ? "error" : output.stopReason === undefined ? "stop" : finishReasonOf(output.stopReason)
  return [{ role: "assistant", parts, finish_reason: finish }]
}

/**
 * `JSON.stringify(outputMessagesOf(output))` for an answer without tool calls,
 * written out without making the objects; undefined for one with tool calls.
 */
export const textOutputJson = (output: OutputContent): string | undefined => {
  if (output.toolCalls !== undefined && output.toolCalls.length > 0) return undefined
  const finish = output.failed === true ? "error" : output.stopReason === undefined ? "stop" : finishReasonOf(output.stopReason)
  const part = output.text !== undefined && output.text !== "" ? `{"type":"text","content":${JSON.stringify(output.text)}}` : ""
  return `[{"role":"assistant","parts":[${part}],"finish_reason":${JSON.stringify(finish)}}]`
}

const utf8Length = (text: string): number => Buffer.byteLength(text, "utf8")

/** Every string in `value` cut to `max` characters (marked with `…`). */
const shortened = (value: unknown, max: number): unknown => {
  if (typeof value === "string") return value.length <= max ? value : `${value.slice(0, max)}…`
  if (Array.isArray(value)) return value.map((item) => shortened(item, max))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) out[key] = shortened((value as Record<string, unknown>)[key], max)
    return out
  }
  return value
}

export interface CappedJson {
  readonly json: string
  readonly truncated: boolean
}

/** A text part (`{type: "text", content}`) as JSON, or undefined for any other part. */
const textPartJson = (part: unknown): string | undefined => {
  const { type, content } = part as { readonly type?: unknown; readonly content?: unknown }
  if (type !== "text" || typeof content !== "string") return undefined
  const keys = Object.keys(part as object)
  return keys.length === 2 && keys[0] === "type" ? `{"type":"text","content":${JSON.stringify(content)}}` : undefined
}

/**
 * `JSON.stringify(value)` for what most calls capture, text parts alone
 * (system instructions, or messages `{role, parts[, finish_reason]}` of text
 * parts), written out without walking objects; undefined for anything else.
 * The same text `JSON.stringify` writes, key for key.
 */
const textJson = (value: ReadonlyArray<unknown>): string | undefined => {
  let json = "["
  for (let i = 0; i < value.length; i++) {
    const item = value[i] as { readonly role?: unknown; readonly parts?: unknown; readonly finish_reason?: unknown; readonly type?: unknown }
    if (i > 0) json += ","
    if (item.type !== undefined) {
      const part = textPartJson(item)
      if (part === undefined) return undefined
      json += part
      continue
    }
    const keys = Object.keys(item)
    if (typeof item.role !== "string" || !Array.isArray(item.parts) || keys[0] !== "role" || keys[1] !== "parts") return undefined
    if (keys.length > 3 || (keys.length === 3 && (keys[2] !== "finish_reason" || typeof item.finish_reason !== "string"))) return undefined
    json += `{"role":${JSON.stringify(item.role)},"parts":[`
    for (let j = 0; j < item.parts.length; j++) {
      const part = textPartJson(item.parts[j])
      if (part === undefined) return undefined
      json += j > 0 ? `,${part}` : part
    }
    json += keys.length === 3 ? `],"finish_reason":${JSON.stringify(item.finish_reason)}}` : "]}"
  }
  return `${json}]`
}

/** Whether JSON text is within the cap as it is (a UTF-16 unit is at most 3 UTF-8 bytes: short text fits without counting). */
export const fitsCap = (json: string, cap: number = CONTENT_CAP_BYTES): boolean => json.length * 3 <= cap || utf8Length(json) <= cap

/**
 * `value` as JSON of at most `cap` UTF-8 bytes. Over the cap, the longest
 * string length that fits is found by bisection (each string cut to it); an
 * array whose structure alone is too big loses its first items until it fits.
 */
export const capJson = (value: ReadonlyArray<unknown>, cap: number = CONTENT_CAP_BYTES): CappedJson => {
  const whole = textJson(value) ?? JSON.stringify(value)
  if (fitsCap(whole, cap)) return { json: whole, truncated: false }
  let items = value
  // Dropping the oldest items first: enough must remain for the structure to fit at a small string length.
  const MIN_STRING = 32
  while (items.length > 1 && utf8Length(JSON.stringify(shortened(items, MIN_STRING))) > cap) items = items.slice(Math.ceil(items.length / 8))
  let low = 0
  let high = cap
  let best = JSON.stringify(shortened(items, 0))
  while (low <= high) {
    const mid = (low + high) >> 1
    const candidate = JSON.stringify(shortened(items, mid))
    if (utf8Length(candidate) <= cap) {
      best = candidate
      low = mid + 1
    } else {
      high = mid - 1
    }
  }
  // A single item whose keys alone exceed the cap cannot be kept at all.
  return { json: utf8Length(best) <= cap ? best : "[]", truncated: true }
}
