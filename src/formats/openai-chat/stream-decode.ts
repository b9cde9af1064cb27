/**
 * Chat Completions SSE chunks → canonical stream events (docs/reference/openai-chat.md §5).
 *
 * Per chunk: the first one opens the message (`message_start`), then text,
 * tool-call starts and argument fragments, the finish, and usage, in that
 * order, so a chunk holding both content and `finish_reason` yields the
 * content first. Only choice 0 is read.
 *
 * Gotchas:
 * - Reasoning deltas of compatible servers become `other_content`: not carried,
 *   but content (they commit the response).
 * - A tool call's `index` is already its position among tool calls. Its first
 *   fragment with an `id` or a name starts it; servers that repeat the id on
 *   later fragments are fine. Argument fragments for a call that never
 *   started are dropped.
 * - `[DONE]` (or EOF) without a prior `finish_reason` means the stream was cut
 *   off: an `error` event, never a normal stop.
 * - Hot path: no `JSON.parse` for a chunk of a shape learnt from an earlier
 *   stream (`JsonShape`: the same JSON but for its id, creation time, text,
 *   arguments, token counts and `obfuscation` pad), property checks on the
 *   object it gives; after the first text chunk, a chunk of the same shape
 *   (`TextChunkTemplate`: the same JSON but for its text and pad) is read
 *   straight to its text.
 */
import type { ChatStreamEvent, StreamError } from "../../domain/chat.ts"
import { pushInto } from "../contract.ts"
import type { ChatEventSink, SinkStreamDecoder } from "../contract.ts"
import { JsonShapes } from "../json-shape.ts"
import { TextChunkTemplate } from "../text-chunk-template.ts"
import type { Hole } from "../text-chunk-template.ts"
import { trimmed } from "../event-data.ts"
import { statusOfOpenAiError } from "./error.ts"
import { decodeUsage, isRecord, messageStartOf, stopReasonOfFinish } from "./mapping.ts"

const MALFORMED: StreamError = { type: "server_error", message: "upstream sent a malformed stream chunk", status: 502, malformed: true }
const TRUNCATED: StreamError = {
  type: "server_error",
  message: "upstream stream ended before a finish reason",
  status: 502,
  malformed: true
}

/** Shapes learnt per stream at most: a stream whose text chunks keep changing shape is parsed. */
const MAX_TEMPLATES = 4

/**
 * The chunk shapes of the last streams (a model's role, text and finish
 * chunks, its usage chunk, a few models): cut at the values that differ from
 * chunk to chunk and stream to stream (the id, a delta's text, tool-call
 * arguments, the obfuscation pad, and the integers: creation time, token
 * counts; a choice's or tool call's index stays). An error is not kept.
 */
const SHAPES = new JsonShapes(16, {
  strings: new Set(["id", "content", "refusal", "reasoning_content", "reasoning", "arguments", "obfuscation"]),
  fixedIntegers: new Set(["index"]),
  learns: (chunk) => chunk.error === undefined
})

export const makeOpenAiChatStreamDecoder = (): SinkStreamDecoder => {
  let started = false
  let finished = false
  let done = false
  let sawToolCall = false
  let refused = false
  const toolStarted: Array<boolean> = []

  const terminal = (): ChatStreamEvent => {
    done = true
    return finished ? { type: "message_stop" } : { type: "error", error: TRUNCATED }
  }

  const fail = (error: StreamError, out: ChatEventSink): void => {
    done = true
    out.push({ type: "error", error })
  }

  const pushDelta = (delta: Record<string, unknown>, out: ChatEventSink): void => {
    if (typeof delta.content === "string" && delta.content !== "") out.push({ type: "text_delta", text: delta.content })
    // Reasoning text of compatible servers (DeepSeek's `reasoning_content`, vLLM's `reasoning`): content, not carried.
    const reasoning = delta.reasoning_content ?? delta.reasoning
    if (typeof reasoning === "string" && reasoning !== "") out.push({ type: "other_content", kind: "reasoning" })
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      refused = true
      out.push({ type: "text_delta", text: delta.refusal, refusal: true })
    }
    if (!Array.isArray(delta.tool_calls)) return
    for (let position = 0; position < delta.tool_calls.length; position++) {
      const fragment: unknown = delta.tool_calls[position]
      if (!isRecord(fragment)) continue
      const index = typeof fragment.index === "number" ? fragment.index : position
      const fn = isRecord(fragment.function) ? fragment.function : undefined
      if (toolStarted[index] !== true && (typeof fragment.id === "string" || typeof fn?.name === "string")) {
        toolStarted[index] = true
        sawToolCall = true
        out.push({
          type: "tool_call_start",
          index,
          id: typeof fragment.id === "string" ? fragment.id : "",
          name: typeof fn?.name === "string" ? fn.name : ""
        })
      }
      const args = fn?.arguments
      if (typeof args === "string" && args !== "" && toolStarted[index] === true) {
        out.push({ type: "tool_call_delta", index, argumentsDelta: args })
      }
    }
  }

  /** This stream's reading of its chunks: most match a shape learnt earlier (see JsonShape) and are not parsed. */
  const reader = SHAPES.reader()

  /** The shape of this stream's text chunks, once one was seen (see TextChunkTemplate). */
  let textChunk: TextChunkTemplate | undefined
  let learnt = 0

  /**
   * Learns the shape of `chunk` when it is text only: after the first chunk,
   * one of its shape decodes to its text and nothing else whatever its text
   * and obfuscation pad (the id, model and the rest are read from the first
   * chunk only). Read by a shape, the chunk's template is cut from its text
   * where the shape's holes were; parsed, it is learnt from the chunk.
   */
  const learn = (data: string, chunk: Record<string, unknown>): void => {
    if (learnt >= MAX_TEMPLATES) return
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (!isRecord(choice) || !isRecord(choice.delta) || typeof choice.finish_reason === "string") return
    const delta = choice.delta
    const reasoning = delta.reasoning_content ?? delta.reasoning
    if (typeof delta.content !== "string" || delta.content === "" || (typeof reasoning === "string" && reasoning !== "")) return
    if ((typeof delta.refusal === "string" && delta.refusal !== "") || Array.isArray(delta.tool_calls)) return
    if (decodeUsage(chunk.usage) !== undefined) return
    learnt++
    const holes: Array<Hole> = [{ owner: delta, key: "content", kind: "text" }]
    if (typeof chunk.obfuscation === "string") holes.push({ owner: chunk, key: "obfuscation", kind: "string" })
    textChunk = reader.matched?.textTemplate(data, holes) ?? TextChunkTemplate.learn(data, chunk, holes)
    // Not the compact serialization: the upstream's serializer differs, and will for every chunk.
    if (textChunk === undefined) learnt = MAX_TEMPLATES
  }

  const decodeInto = (raw: string, _event: string | undefined, out: ChatEventSink): void => {
    if (done) return
    const data = trimmed(raw)
    if (data === "") return
    const text = textChunk?.match(data, out.textRead !== false)
    if (text !== undefined) {
      if (text !== "") out.push({ type: "text_delta", text })
      return
    }
    if (data.startsWith("[DONE]")) {
      out.push(terminal())
      return
    }
    const chunk = reader.read(data)
    if (chunk === undefined) return fail(MALFORMED, out)
    if (chunk.error !== undefined && chunk.error !== null) return fail(streamError(chunk.error), out)
    if (!started) {
      started = true
      out.push(messageStartOf(chunk.id, chunk.model, chunk.created))
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined
    if (isRecord(choice)) {
      if (isRecord(choice.delta)) pushDelta(choice.delta, out)
      if (typeof choice.finish_reason === "string" && !finished) {
        finished = true
        out.push({
          type: "message_delta",
          stopReason: refused ? "content_filter" : stopReasonOfFinish(choice.finish_reason, sawToolCall)
        })
      }
    }
    const usage = decodeUsage(chunk.usage)
    if (usage !== undefined) out.push({ type: "usage", usage })
    else learn(data, chunk)
  }

  return {
    decodeInto,
    push: pushInto(decodeInto),
    end(): ReadonlyArray<ChatStreamEvent> {
      return done ? [] : [terminal()]
    }
  }
}

const streamError = (raw: unknown): StreamError => {
  if (!isRecord(raw)) {
    const message = typeof raw === "string" ? raw : "upstream reported an error"
    return { type: "server_error", message, status: 500 }
  }
  const type = typeof raw.type === "string" ? raw.type : undefined
  return {
    type: type ?? "server_error",
    message: typeof raw.message === "string" ? raw.message : "upstream reported an error",
    status: statusOfOpenAiError(type, raw.code),
    code: typeof raw.code === "string" ? raw.code : undefined
  }
}
