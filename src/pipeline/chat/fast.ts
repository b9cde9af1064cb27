/**
 * The fast path's view of a body it forwards byte for byte (caller and
 * provider speak the same format, docs/reference/gateway-spec.md §6.1.3): a stream gate that decodes each
 * event before it is written, feeding the collector and telling the forwarder
 * when the response commits; and an inspector for a held JSON body. Neither
 * changes a byte the caller gets.
 */
import { Result } from "effect"
import { commitsResponse } from "../../domain/index.ts"
import type { CallerFormat, ChatResponse, ChatStreamEvent, StreamError } from "../../domain/index.ts"
import type { DecodeFailure, SinkStreamDecoder } from "../../formats/index.ts"
import { Anthropic, OpenAiChat, OpenAiResponses, PROVIDER_CODECS } from "../../formats/index.ts"
import { summarizeChatJson } from "../../formats/summary.ts"
import { SseParser } from "../../providers/sse.ts"
import type { SseSink } from "../../providers/sse.ts"
import type { StreamBreak, StreamGate } from "../forward/index.ts"
import type { ResponseCollector } from "./collector.ts"
import type { StreamSplice } from "./continuation.ts"

const STREAM_DECODERS: Readonly<Record<CallerFormat, () => SinkStreamDecoder>> = {
  openai: OpenAiChat.makeOpenAiChatStreamDecoder,
  anthropic: () => Anthropic.makeAnthropicStreamDecoder(),
  responses: OpenAiResponses.makeResponsesStreamDecoder
}

/**
 * The gate of a same-format chat stream: decodes events into the collector and
 * applies the one commit rule. A break names how many of the chunk's events
 * came before it, so the forwarder can still send those.
 *
 * Per chunk the parser hands each event to the decoder and the decoder each
 * canonical event to the collector, through sinks made once per stream: no
 * array and no `SseEvent` per chunk. When nothing reads the answer's text (no
 * output guardrail, content capture, cache, tap or splice), text chunks after
 * the commit and the first token are checked, not decoded (`textRead`).
 */
export const chatStreamGate = (format: CallerFormat, collector: ResponseCollector, splice?: StreamSplice): StreamGate => {
  const parser = new SseParser()
  const decoder = STREAM_DECODERS[format]()
  let committed = false
  /** The chunk's events read so far (the break's `eventsBefore`). */
  let read = 0
  /** The break in this chunk: the events after it are not read. */
  let cut: StreamBreak | undefined
  /** The break at `event`, continued elsewhere when the splice takes it (then the collector never hears of it). */
  const broken = (error: StreamError, eventsBefore: number): StreamBreak => {
    if (committed && splice?.takes(error) === true) return { error, eventsBefore, committed, continued: true }
    collector.event({ type: "error", error })
    return { error, eventsBefore, committed }
  }
  /** Text deltas read by nothing once the answer committed and its first token was timed. */
  const textUnread = splice === undefined && !collector.readsText
  const canonical: { push: (event: ChatStreamEvent) => void; textRead: boolean } = {
    textRead: true,
    push: (event: ChatStreamEvent): void => {
      if (cut !== undefined) return
      if (event.type === "error") {
        cut = broken(event.error, read)
        return
      }
      collector.event(event)
      splice?.forwarded(event)
      if (!committed && commitsResponse(event)) committed = true
      if (textUnread && committed && collector.firstTokenAt !== undefined) canonical.textRead = false
    }
  }
  const upstream: SseSink = (data, event) => {
    if (cut !== undefined) return
    decoder.decodeInto(data, event, canonical)
    read++
  }
  return {
    push: (chunk) => {
      read = 0
      parser.read(chunk, upstream)
      return cut ?? (committed ? "commit" : "hold")
    },
    end: () => {
      read = 0
      parser.readEnd(upstream)
      if (cut !== undefined) return cut
      for (const event of decoder.end()) {
        if (event.type === "error") return broken(event.error, read)
        collector.event(event)
        splice?.forwarded(event)
      }
      return undefined
    },
    continues: splice === undefined ? undefined : (reason) => committed && splice.takes(reason),
    // Only a reader of the canonical events hears of it: the log line and the record have the stop already.
    stopped: (error) => collector.tapped?.push({ type: "error", error })
  }
}

const RESPONSE_DECODERS: Readonly<Record<CallerFormat, (json: unknown) => Result.Result<ChatResponse, DecodeFailure>>> = {
  openai: PROVIDER_CODECS.openai.decodeResponse,
  anthropic: PROVIDER_CODECS.anthropic.decodeResponse,
  responses: OpenAiResponses.decodeResponsesResponse
}

/**
 * Reads a held same-format JSON answer into the collector; a body that is not
 * such an answer is refused. When the cache will keep the answer, it is
 * decoded whole too.
 */
export const chatJsonInspector = (format: CallerFormat, collector: ResponseCollector) => (json: unknown): string | undefined => {
  const summary = summarizeChatJson(format, json)
  if (summary.model === undefined && summary.stopReason === undefined && summary.usage === undefined) {
    return "upstream sent a JSON body that is not a chat response"
  }
  collector.summary(summary)
  if (collector.keeping) {
    const decoded = RESPONSE_DECODERS[format](json)
    if (Result.isSuccess(decoded)) collector.final = decoded.success
  }
  return undefined
}
