/**
 * `on_stream_break = "continue"` (issue 25): a committed chat stream that
 * breaks (the connection reset, an upstream error event, the idle timeout) is
 * continued on another target of the plan behind the same caller stream.
 *
 * Details
 * - The attempt's `StreamSplice` watches what of the answer reached the
 *   caller (its text, whether a tool call or the finish came) and holds the
 *   caller's stream encoder: the normalized path writes with it; the fast
 *   path, whose bytes go out verbatim, keeps the events it forwards, and a
 *   break replays them into the encoder so its state (ids, block indices)
 *   matches what the caller saw. Armed and never used, it costs an array push
 *   per event.
 * - At a break the stages ask the splice (`takes`) instead of writing their
 *   error frame; the body then ends quietly and `continueAfter` appends the
 *   continuation: the original request plus the text already sent, as a
 *   trailing assistant message where the provider prefills (Anthropic),
 *   otherwise followed by `CONTINUE_PROMPT`. Its events are re-encoded with
 *   the same encoder: no second head, the same ids and indices, one finish,
 *   usage summed over both calls; a continuation that starts over is trimmed.
 * - Not continued (the error frame as before): a break once a tool call has
 *   started or after the finish, a draining shutdown, or no target left.
 *   Every continuation attempt fails over to the next target before it
 *   commits; none left, the caller gets the error frame.
 */
import { Effect, Stream } from "effect"
import type { Scope } from "effect"
import { commitsResponse } from "../../domain/index.ts"
import type { ChatRequest, ChatStreamEvent, Message, StreamError, UpstreamError, Usage } from "../../domain/index.ts"
import type { ProviderCodec, StreamEncoder } from "../../formats/index.ts"
import type { UpstreamResponse } from "../../providers/transport.ts"
import type { PlanTarget } from "../../routing/plan.ts"
import type { RequestContext } from "../context.ts"
import { commitStream, inBandFailure, stopFrame } from "../forward/index.ts"
import type { ChunkOut, StreamStage, StreamStop } from "../forward/index.ts"
import { followedBy } from "../reply.ts"
import type { ReplyStream } from "../reply.ts"
import type { ResponseCollector } from "./collector.ts"
import { decodingStage } from "./decoding.ts"

/** The user message that asks a provider without prefill to go on with its cut-off answer (docs/routing.md). */
export const CONTINUE_PROMPT =
  "Your previous message was cut off. Continue it exactly from where it stopped, without repeating any of it and without any preamble."

/**
 * What of a streamed answer reached the caller, and why it broke when it is to be continued.
 *
 * Details
 * - Armed on every stream of a target that continues, used only by one that
 *   breaks: what costs per event is left for the break. The fast path's
 *   forwarded events are only kept (the decoder made them already); at a break
 *   they are read (text, tool call, finish, usage) and replayed into the
 *   caller's encoder, made then, so its state (ids, block indices, sequence
 *   numbers) is what it would have been had it written them.
 * - Whether the request can be continued at all (its canonical form decodes,
 *   with nothing untranslatable) is asked with the encoder, at the first break:
 *   a splice whose request cannot be continued takes no break.
 */
export class StreamSplice {
  /** What cut the stream, once a break was taken for continuing. */
  broke: UpstreamError | StreamError | undefined
  /** The caller's encoder for the request, or undefined when it cannot be continued. */
  private readonly encoderFor: () => StreamEncoder | undefined
  private made: StreamEncoder | undefined
  private asked = false
  /** Events the fast path forwarded verbatim, not yet read nor encoded; a plain text delta as its text alone. */
  private kept: Array<ChatStreamEvent | string> = []
  private sent = ""
  private lastUsage: Usage | undefined
  private toolStarted = false
  private finished = false
  /** The fast path forwarded a tool call's start or the finish: no break will be taken. */
  private spent = false

  constructor(encoderFor: () => StreamEncoder | undefined) {
    this.encoderFor = encoderFor
  }

  /**
   * The caller's encoder, up to date with every event that reached the caller
   * (the normalized path writes with it); undefined when the request cannot be continued.
   */
  get encoder(): StreamEncoder | undefined {
    if (!this.asked) {
      this.asked = true
      this.made = this.encoderFor()
    }
    if (this.kept.length > 0) this.catchUp()
    return this.made
  }

  /** The answer's text so far, whole. */
  get text(): string {
    if (this.kept.length > 0) this.catchUp()
    return this.sent
  }

  /** The latest usage the upstreams reported, summed over the calls before this one. */
  get usage(): Usage | undefined {
    if (this.kept.length > 0) this.catchUp()
    return this.lastUsage
  }

  /** An event that reached the caller, written with `encoder` (or `encode`). */
  observe(event: ChatStreamEvent): void {
    switch (event.type) {
      case "text_delta":
        this.sent += event.text
        return
      case "tool_call_start":
        this.toolStarted = true
        return
      case "message_delta":
        this.finished = true
        return
      case "message_start":
        if (event.usage !== undefined) this.lastUsage = event.usage
        return
      case "usage":
        this.lastUsage = event.usage
        return
      default:
        return
    }
  }

  /**
   * An event the fast path forwarded verbatim: kept, read and encoded only at
   * a break. Once a tool call started or the finish came no break is taken:
   * nothing more is kept, and what was is let go.
   */
  forwarded(event: ChatStreamEvent): void {
    if (this.spent) return
    if (event.type === "tool_call_start" || event.type === "message_delta") {
      this.spent = true
      this.kept = []
      return
    }
    // (The text alone: the event itself dies young, the text lives on in the answer anyway.)
    this.kept.push(event.type === "text_delta" && event.refusal === undefined ? event.text : event)
  }

  /** `event` in the caller's format, once a break was taken (the request can be continued). */
  encode(event: ChatStreamEvent): string {
    return this.encoder?.push(event) ?? ""
  }

  /** Whether the break `reason` is continued (it is then recorded); a shutdown never is. */
  takes(reason: StreamStop | StreamError): boolean {
    if (reason === "shutdown" || this.spent) return false
    if (this.kept.length > 0) this.catchUp()
    if (this.toolStarted || this.finished || this.encoder === undefined) return false
    this.broke = reason
    return true
  }

  /** The kept events read, and replayed into the encoder (made now if it was not). */
  private catchUp(): void {
    const events = this.kept
    this.kept = []
    const encoder = this.encoder
    for (const kept of events) {
      const event: ChatStreamEvent = typeof kept === "string" ? { type: "text_delta", text: kept } : kept
      this.observe(event)
      encoder?.push(event)
    }
  }
}

/** How the continuation of a stream is asked for and reported. */
export interface Continuation {
  readonly ctx: RequestContext
  readonly splice: StreamSplice
  /** The committed attempt's collector: the continuation's events go on into it. */
  readonly collector: ResponseCollector
  /** The original request, canonical. */
  readonly request: ChatRequest
  /** The plan's other targets, in order. */
  readonly targets: ReadonlyArray<PlanTarget>
  /** Sends `request` to `target` as a translated stream: its response head. */
  readonly open: (target: PlanTarget, request: ChatRequest) => Effect.Effect<UpstreamResponse, UpstreamError, Scope.Scope>
  /** The codec of a target's provider. */
  readonly codecOf: (target: PlanTarget) => ProviderCodec
  /** Told of each continuation attempt: its target, and how it went before its commit. */
  readonly noted: (target: PlanTarget, outcome: "ok" | UpstreamError) => void
}

/**
 * The request that asks for the rest of an answer of which `sent` reached the
 * caller: prefilled (a trailing assistant message, without the trailing
 * whitespace Anthropic refuses) or followed by `CONTINUE_PROMPT`.
 */
export const continuationRequest = (request: ChatRequest, sent: string, prefill: boolean): ChatRequest => {
  const prefix = prefill ? sent.trimEnd() : sent
  if (prefix === "") return request
  const messages: Array<Message> = [...request.messages]
  const last = messages[messages.length - 1]
  // A caller's own prefill is the start of the same answer: the text extends it.
  if (last?.role === "assistant") messages[messages.length - 1] = { role: "assistant", content: [...last.content, { type: "text", text: prefix }] }
  else messages.push({ role: "assistant", content: [{ type: "text", text: prefix }] })
  if (!prefill) messages.push({ role: "user", content: [{ type: "text", text: CONTINUE_PROMPT }] })
  return { ...request, messages }
}

/**
 * The seam between the text sent and the continuation's: a continuation that
 * starts the answer over is held until it has repeated all of `sent` (then
 * that is dropped) or differs; whitespace the prefill left out is not sent twice.
 */
export class SeamTrim {
  private pending = ""
  private open = true
  private readonly sent: string
  private readonly skipped: string

  constructor(sent: string, prefilled: boolean) {
    this.sent = sent
    this.skipped = prefilled ? sent.slice(sent.trimEnd().length) : ""
  }

  /** The part of `text` that goes to the caller now. */
  push(text: string): string {
    if (!this.open) return text
    const seen = this.pending + text
    if (this.sent !== "" && seen.length >= this.sent.length && seen.startsWith(this.sent)) {
      this.open = false
      this.pending = ""
      return seen.slice(this.sent.length)
    }
    if ((this.sent !== "" && this.sent.startsWith(seen)) || (this.skipped !== "" && this.skipped.startsWith(seen))) {
      this.pending = seen
      return ""
    }
    this.open = false
    this.pending = ""
    return this.skipped !== "" && seen.startsWith(this.skipped) ? seen.slice(this.skipped.length) : seen
  }

  /** What is still held (the continuation moved on to other output, or ended). */
  flush(): string {
    if (!this.open) return ""
    this.open = false
    const held = this.pending
    this.pending = ""
    return held === this.sent || held === this.skipped ? "" : held
  }
}

const add = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : a + b)

/** Usage over two upstream calls. */
export const sumUsage = (before: Usage | undefined, after: Usage): Usage =>
  before === undefined ? after : {
    inputTokens: before.inputTokens + after.inputTokens,
    outputTokens: before.outputTokens + after.outputTokens,
    cacheReadTokens: add(before.cacheReadTokens, after.cacheReadTokens),
    cacheWriteTokens: add(before.cacheWriteTokens, after.cacheWriteTokens),
    reasoningTokens: add(before.reasoningTokens, after.reasoningTokens)
  }

/**
 * The stage of a continuation's upstream stream: decoded, its head dropped,
 * its text trimmed at the seam, its usage added to the earlier calls', and
 * encoded with the caller's encoder. It commits with its first content (a
 * failure before is the continuation attempt's); a later break is continued
 * again or ends with the error frame.
 */
const continuationStage = (c: Continuation, codec: ProviderCodec, trim: SeamTrim): StreamStage => {
  const { splice, collector } = c
  const before = splice.usage
  let committed = false
  const adapt = (event: ChatStreamEvent, into: Array<ChatStreamEvent>): void => {
    switch (event.type) {
      case "message_start":
        if (event.usage !== undefined) into.push({ type: "usage", usage: sumUsage(before, event.usage) })
        return
      case "usage":
        into.push({ type: "usage", usage: sumUsage(before, event.usage) })
        return
      case "text_delta": {
        const text = trim.push(event.text)
        if (text !== "") into.push(text === event.text ? event : { type: "text_delta", text })
        return
      }
      case "error":
        into.push(event)
        return
      default: {
        const held = trim.flush()
        if (held !== "") into.push({ type: "text_delta", text: held })
        into.push(event)
      }
    }
  }
  const emit = (upstream: ReadonlyArray<ChatStreamEvent>, out: ChunkOut): "hold" | "commit" | "end" | StreamError => {
    const events: Array<ChatStreamEvent> = []
    for (const event of upstream) adapt(event, events)
    let frames = ""
    let verdict: "hold" | "commit" | "end" | undefined
    for (const event of events) {
      if (event.type === "error") {
        if (!committed) return event.error
        if (splice.takes(event.error)) {
          verdict = "end"
          break
        }
      }
      collector.event(event)
      splice.observe(event)
      frames += splice.encode(event)
      if (!committed && commitsResponse(event)) committed = true
    }
    if (frames !== "") out.push(Buffer.from(frames))
    return verdict ?? (committed ? "commit" : "hold")
  }
  return decodingStage(codec, emit, (reason, out) => {
    if (splice.takes(reason)) return
    out.push(Buffer.from(errorFrame(c, reason)))
  })
}

/** The error frame that ends a stream no continuation could save, noted on the log line. */
const errorFrame = (c: Continuation, reason: StreamStop | StreamError): string => {
  let error: StreamError
  if (reason === "shutdown" || "_tag" in reason) {
    const stop = stopFrame(reason)
    error = { type: stop.timedOut ? "timeout_error" : "api_error", message: stop.message, status: stop.status }
  } else {
    error = reason
  }
  c.collector.event({ type: "error", error })
  if (reason !== "shutdown") c.ctx.log.error_code = c.collector.error
  return c.splice.encode({ type: "error", error })
}

/** The continuation of a stream cut by `reason` on `targets[from]` or later, or the error frame when none commits. */
const continueFrom = (c: Continuation, from: number, reason: UpstreamError | StreamError): ReplyStream => {
  if (from >= c.targets.length) {
    c.ctx.log.continued = "failed"
    return Stream.succeed(Buffer.from(errorFrame(c, reason)))
  }
  const target = c.targets[from]
  const codec = c.codecOf(target)
  const prefill = target.provider.family === "anthropic"
  const sent = c.splice.text
  const source = { providerId: target.provider.id, family: target.provider.family }
  const opened = Effect.suspend(() => {
    // Cleared before the stage runs: a break of the continuation itself is recorded anew.
    c.splice.broke = undefined
    return Effect.flatMap(
      c.open(target, continuationRequest(c.request, sent, prefill)),
      (response) => commitStream(c.ctx, response.body, continuationStage(c, codec, new SeamTrim(sent, prefill)), (error) => inBandFailure(source, error))
    )
  })
  return Stream.unwrap(
    opened.pipe(
      Effect.map((body) => {
        c.ctx.log.continued = "ok"
        c.ctx.log.continued_on = target.provider.id
        c.noted(target, "ok")
        return Stream.concat(body, Stream.suspend(() => continuationOf(c, from + 1)))
      }),
      Effect.catch((error: UpstreamError) =>
        Effect.sync(() => {
          c.noted(target, error)
          return continueFrom(c, from + 1, reason)
        })
      )
    )
  )
}

/** What follows a stream that ended: nothing, or its continuation on `targets[from]` or later when it broke. */
const continuationOf = (c: Continuation, from: number): ReplyStream => {
  const reason = c.splice.broke
  return reason === undefined ? Stream.empty : continueFrom(c, from, reason)
}

/**
 * `body`, followed by its continuation when it broke and `splice` took the
 * break (`continuation` asked only then). The body keeps its fast lane.
 */
export const continueAfter = (body: ReplyStream, splice: StreamSplice, continuation: () => Continuation): ReplyStream =>
  followedBy(body, () => splice.broke === undefined ? undefined : continueFrom(continuation(), 0, splice.broke))
