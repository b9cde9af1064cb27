/**
 * What the gateway learns from a chat response it forwards, on either path:
 * model, finish reason, token usage and the response text (capped at 64 KB,
 * docs/reference/gateway-spec.md §6.1.4) for the output guardrail and telemetry. Fed canonical events
 * (streams) or a canonical response; never holds a chunk back.
 */
import { classifyStreamError } from "../../domain/index.ts"
import type { ChatResponse, ChatStreamEvent, StopReason, Usage } from "../../domain/index.ts"
import { ResponseAssembler } from "../../formats/index.ts"
import type { ChatSummary } from "../../formats/summary.ts"

export const TEXT_CAP = 64 * 1024

export class ResponseCollector {
  /** Builds the whole answer from a stream, when the cache will keep it (bounded by its entry size). */
  readonly assembler: ResponseAssembler | undefined
  /** The whole answer of a non-streamed response, when the cache will keep it. */
  final: ChatResponse | undefined
  model: string | undefined
  stopReason: StopReason | undefined
  usage: Usage | undefined
  text = ""
  truncated = false
  /** The classification of a failure the stream reported or suffered after its head. */
  error: string | undefined

  private appendText(text: string): void {
    if (this.truncated) return
    const room = TEXT_CAP - this.text.length
    if (text.length > room) {
      this.text += text.slice(0, room)
      this.truncated = true
    } else {
      this.text += text
    }
  }

  /** `keepUpTo`: assemble the whole answer (for the cache), up to this many bytes of it. */
  constructor(keepUpTo?: number) {
    this.assembler = keepUpTo === undefined ? undefined : new ResponseAssembler(keepUpTo)
  }

  /** Whether the whole answer is wanted (the cache will keep it). */
  get keeping(): boolean {
    return this.assembler !== undefined
  }

  event(event: ChatStreamEvent): void {
    this.assembler?.event(event)
    switch (event.type) {
      case "message_start":
        if (event.model !== "") this.model = event.model
        if (event.usage !== undefined) this.usage = event.usage
        return
      case "text_delta":
        this.appendText(event.text)
        return
      case "message_delta":
        this.stopReason = event.stopReason
        return
      case "usage":
        this.usage = event.usage
        return
      case "error":
        this.error = classifyStreamError(event.error)
        return
      default:
        return
    }
  }

  /** What a verbatim JSON body told. */
  summary(summary: ChatSummary): void {
    if (summary.model !== undefined) this.model = summary.model
    if (summary.stopReason !== undefined) this.stopReason = summary.stopReason
    if (summary.usage !== undefined) this.usage = summary.usage
    this.appendText(summary.text)
  }

  response(response: ChatResponse): void {
    if (this.keeping) this.final = response
    this.model = response.model
    this.stopReason = response.stopReason
    this.usage = response.usage
    for (const part of response.content) if (part.type === "text") this.appendText(part.text)
  }
}
