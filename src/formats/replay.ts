/**
 * A complete chat answer as a stream and back, in canonical form:
 *
 * - `ResponseAssembler` is fed the canonical events of a stream and gives the
 *   final `ChatResponse` (text, reasoning and tool calls in order, stop reason, usage),
 *   or undefined when the stream did not finish or outgrew the byte bound;
 * - `responseEvents` is the event sequence that replays a response, which any
 *   caller format's stream encoder turns into that format's stream.
 *
 * The response cache stores answers this way: a streamed answer is kept as its
 * final response, and a hit on a streaming request is replayed as a stream.
 */
import type { ChatResponse, ChatStreamEvent, StopReason, Usage } from "../domain/chat.ts"

const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0 }

export class ResponseAssembler {
  private id = ""
  private model = ""
  private created = 0
  private readonly content: Array<
    | { type: "text"; text: string; refusal?: true | undefined }
    | { type: "reasoning"; text: string; signature?: string | undefined; redacted?: string | undefined }
    | { type: "tool_call"; id: string; name: string; arguments: string }
  > = []
  private readonly tools = new Map<number, { type: "tool_call"; id: string; name: string; arguments: string }>()
  private stopReason: StopReason | undefined
  private stopSequence: string | undefined
  private usage: Usage | undefined
  private finished = false
  private failed = false
  private size = 0
  private readonly limit: number

  /** `limit`: bytes of text and arguments past which the answer is not assembled (too big to keep). */
  constructor(limit: number) {
    this.limit = limit
  }

  event(event: ChatStreamEvent): void {
    if (this.failed) return
    switch (event.type) {
      case "message_start":
        this.id = event.id
        this.model = event.model
        this.created = event.created
        if (event.usage !== undefined) this.usage = event.usage
        return
      case "text_delta": {
        if (!this.grow(event.text.length)) return
        const last = this.content.at(-1)
        if (last?.type === "text" && last.refusal === event.refusal) last.text += event.text
        else this.content.push(event.refusal ? { type: "text", text: event.text, refusal: true } : { type: "text", text: event.text })
        return
      }
      case "reasoning_delta": {
        if (!this.grow(event.text.length)) return
        const last = this.openReasoning()
        if (last !== undefined) last.text += event.text
        else this.content.push({ type: "reasoning", text: event.text })
        return
      }
      case "reasoning_signature": {
        if (!this.grow(event.signature.length)) return
        const last = this.openReasoning()
        if (last !== undefined) last.signature = event.signature
        else this.content.push({ type: "reasoning", text: "", signature: event.signature })
        return
      }
      case "reasoning_redacted":
        if (this.grow(event.data.length)) this.content.push({ type: "reasoning", text: "", redacted: event.data })
        return
      case "tool_call_start": {
        if (!this.grow(event.id.length + event.name.length)) return
        const call = { type: "tool_call" as const, id: event.id, name: event.name, arguments: "" }
        this.tools.set(event.index, call)
        this.content.push(call)
        return
      }
      case "tool_call_delta": {
        const call = this.tools.get(event.index)
        if (call !== undefined && this.grow(event.argumentsDelta.length)) call.arguments += event.argumentsDelta
        return
      }
      case "message_delta":
        this.stopReason = event.stopReason
        this.stopSequence = event.stopSequence
        return
      case "usage":
        this.usage = event.usage
        return
      case "message_stop":
        this.finished = true
        return
      case "error":
        this.failed = true
        return
      case "other_content":
        return
    }
  }

  /** The last part when it is reasoning still taking text and a signature (neither signed nor redacted). */
  private openReasoning(): { type: "reasoning"; text: string; signature?: string | undefined } | undefined {
    const last = this.content.at(-1)
    return last?.type === "reasoning" && last.signature === undefined && last.redacted === undefined ? last : undefined
  }

  private grow(bytes: number): boolean {
    this.size += bytes
    if (this.size > this.limit) this.failed = true
    return !this.failed
  }

  /** The finished answer; undefined when the stream failed, did not finish, or outgrew the bound. */
  result(): ChatResponse | undefined {
    if (!this.finished || this.failed || this.stopReason === undefined) return undefined
    return {
      id: this.id,
      model: this.model,
      created: this.created,
      content: this.content.map((part) => ({ ...part })),
      stopReason: this.stopReason,
      stopSequence: this.stopSequence,
      usage: this.usage ?? ZERO_USAGE
    }
  }
}

/** The canonical events that replay a complete answer, in stream order. */
export const responseEvents = (response: ChatResponse): Array<ChatStreamEvent> => {
  const events: Array<ChatStreamEvent> = [{ type: "message_start", id: response.id, model: response.model, created: response.created }]
  let tool = 0
  for (const part of response.content) {
    if (part.type === "text") {
      if (part.text !== "") events.push(part.refusal ? { type: "text_delta", text: part.text, refusal: true } : { type: "text_delta", text: part.text })
    } else if (part.type === "reasoning" && part.redacted !== undefined) {
      events.push({ type: "reasoning_redacted", data: part.redacted })
    } else if (part.type === "reasoning") {
      events.push({ type: "reasoning_delta", text: part.text })
      if (part.signature !== undefined) events.push({ type: "reasoning_signature", signature: part.signature })
    } else {
      const index = tool++
      events.push({ type: "tool_call_start", index, id: part.id, name: part.name })
      if (part.arguments !== "") events.push({ type: "tool_call_delta", index, argumentsDelta: part.arguments })
    }
  }
  events.push({ type: "message_delta", stopReason: response.stopReason, stopSequence: response.stopSequence })
  events.push({ type: "usage", usage: response.usage })
  events.push({ type: "message_stop" })
  return events
}
