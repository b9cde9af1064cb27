/**
 * What the gateway learns from a chat response it forwards, on either path:
 * id, model, finish reason, token usage, the response text and tool calls
 * (capped at 64 KB each, docs/reference/gateway-spec.md §6.1.4) for the log line, the output guardrail and
 * telemetry, and when the first content token came. Fed canonical events
 * (streams), a verbatim body's summary or a canonical response; never holds a
 * chunk back.
 */
import { classifyStreamError } from "../../domain/index.ts"
import type { ToolCallSummary } from "../../formats/summary.ts"
import type { ChatResponse, ChatStreamEvent, StopReason, Usage } from "../../domain/index.ts"
import { ResponseAssembler } from "../../formats/index.ts"
import type { ChatSummary } from "../../formats/summary.ts"

export const TEXT_CAP = 64 * 1024

export class ResponseCollector {
  /** Builds the whole answer from a stream, when the cache will keep it (bounded by its entry size). */
  readonly assembler: ResponseAssembler | undefined
  /** The whole answer of a non-streamed response, when the cache will keep it. */
  final: ChatResponse | undefined
  id: string | undefined
  model: string | undefined
  stopReason: StopReason | undefined
  usage: Usage | undefined
  text = ""
  truncated = false
  /** Tool calls in order, their arguments within one 64 KB budget. */
  readonly toolCalls: Array<{ id: string; name: string; arguments: string }> = []
  private toolRoom = TEXT_CAP
  /** `performance.now()` when the first content (text, a tool call, other output) arrived. */
  firstTokenAt: number | undefined
  /** The classification of a failure the stream reported or suffered after its head. */
  error: string | undefined

  private appendText(text: string): void {
    if (this.truncated || !this.keepText) return
    const room = TEXT_CAP - this.text.length
    if (text.length > room) {
      this.text += text.slice(0, room)
      this.truncated = true
    } else {
      this.text += text
    }
  }

  private appendArguments(index: number, text: string): void {
    const call = this.toolCalls[index]
    if (call === undefined || this.toolRoom <= 0 || !this.keepText) return
    const kept = text.length > this.toolRoom ? text.slice(0, this.toolRoom) : text
    this.toolRoom -= kept.length
    call.arguments += kept
  }

  private addToolCalls(calls: ReadonlyArray<ToolCallSummary>): void {
    for (const call of calls) {
      this.toolCalls.push({ id: call.id, name: call.name, arguments: "" })
      this.appendArguments(this.toolCalls.length - 1, call.arguments)
    }
  }

  /**
   * Whether the answer's text and tool-call arguments are kept (for the output
   * guardrail or GenAI content capture). Without, a stream's text deltas are
   * not joined at all: no string per chunk, no memory per open stream.
   */
  private readonly keepText: boolean

  /**
   * Every canonical event of the answer, in order, when a reader asked for
   * them (the library's canonical stream); taken as the reply's body is read.
   */
  readonly tapped: Array<ChatStreamEvent> | undefined

  /** Called with the collector when a stream's terminal event arrived (its answer is whole then). */
  private readonly onComplete: ((collector: ResponseCollector) => void) | undefined

  /**
   * `keepUpTo`: assemble the whole answer (for the cache), up to this many
   * bytes of it. `keepText`: see the field. `onComplete`: see the field.
   */
  constructor(keepUpTo: number | undefined, keepText: boolean, onComplete?: (collector: ResponseCollector) => void, tap = false) {
    this.assembler = keepUpTo === undefined ? undefined : new ResponseAssembler(keepUpTo)
    this.tapped = tap ? [] : undefined
    this.keepText = keepText
    this.onComplete = onComplete
  }

  /** Whether a text delta changes anything but the first token's time: its text is kept, the answer assembled, or the events tapped. */
  get readsText(): boolean {
    return this.keepText || this.assembler !== undefined || this.tapped !== undefined
  }

  /** Whether the whole answer is wanted (the cache will keep it). */
  get keeping(): boolean {
    return this.assembler !== undefined
  }

  event(event: ChatStreamEvent): void {
    this.tapped?.push(event)
    this.assembler?.event(event)
    switch (event.type) {
      case "message_start":
        if (event.id !== "") this.id = event.id
        if (event.model !== "") this.model = event.model
        if (event.usage !== undefined) this.usage = event.usage
        return
      case "text_delta":
        this.firstTokenAt ??= performance.now()
        this.appendText(event.text)
        return
      case "tool_call_start":
        this.firstTokenAt ??= performance.now()
        this.toolCalls[event.index] = { id: event.id, name: event.name, arguments: "" }
        return
      case "tool_call_delta":
        this.appendArguments(event.index, event.argumentsDelta)
        return
      case "other_content":
      case "reasoning_delta":
      case "reasoning_redacted":
        this.firstTokenAt ??= performance.now()
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
      case "message_stop":
        this.onComplete?.(this)
        return
      default:
        return
    }
  }

  /** What a verbatim JSON body told. */
  summary(summary: ChatSummary): void {
    if (summary.id !== undefined) this.id = summary.id
    if (summary.model !== undefined) this.model = summary.model
    if (summary.stopReason !== undefined) this.stopReason = summary.stopReason
    if (summary.usage !== undefined) this.usage = summary.usage
    this.appendText(summary.text)
    if (summary.toolCalls !== undefined) this.addToolCalls(summary.toolCalls)
  }

  response(response: ChatResponse): void {
    if (this.keeping) this.final = response
    this.id = response.id
    this.model = response.model
    this.stopReason = response.stopReason
    this.usage = response.usage
    for (const part of response.content) {
      if (part.type === "text") this.appendText(part.text)
      else if (part.type === "tool_call") this.addToolCalls([part])
    }
  }
}
