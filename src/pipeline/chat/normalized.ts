/**
 * The normalized path (caller and provider speak different wire families,
 * docs/reference/gateway-spec.md §6.1.3): the upstream response is decoded into canonical form and
 * re-encoded in the caller's format, chunk by chunk as an Effect Stream for
 * streams. Nothing waits for the whole response.
 *
 * The response head is committed with the first translated content (or the
 * finish), not with the upstream's head: an upstream that fails before
 * producing any (a 200, `message_start`, then `overloaded_error`; a dropped
 * connection) is still retried or failed over.
 */
import { Effect, Result, Stream } from "effect"
import { commitsResponse, UpstreamError } from "../../domain/index.ts"
import type { CallerFormat, ChatRequest, ChatStreamEvent, FailureSource, ProviderFamily } from "../../domain/index.ts"
import type { CallerCodec, ProviderCodec } from "../../formats/index.ts"
import { framerFor } from "../../providers/framing.ts"
import type { UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import type { ResponseCollector } from "./collector.ts"
import { commitHead, inBandFailure, responseHeaders, SSE_HEADERS, writeText } from "../forward/index.ts"
import { reply, SENT } from "../reply.ts"
import type { Forwarded } from "../forward/index.ts"

const RESPONSE_LIMIT = 32 * 1024 * 1024

export interface Translation {
  readonly ctx: RequestContext
  readonly providerId: string
  readonly providerFamily: ProviderFamily
  readonly provider: ProviderCodec
  readonly caller: CallerCodec
  /** The caller's format (its stream's error frame at shutdown). */
  readonly format: CallerFormat
  readonly request: ChatRequest
  readonly headers: Readonly<Record<string, string>>
  readonly collector: ResponseCollector
}

const sourceOf = (t: Translation): FailureSource => ({ providerId: t.providerId, family: t.providerFamily })

const invalid = (t: Translation, message: string, status: number): UpstreamError =>
  UpstreamError.fault(sourceOf(t), message, { status })

/** Reads, decodes and re-encodes a JSON answer; the attempt resolves with it unsent (a `Reply`). */
export const translateJson = (t: Translation, response: UpstreamResponse): Effect.Effect<Forwarded, UpstreamError> =>
  Effect.flatMap(response.body.readAll(RESPONSE_LIMIT), (bytes) => {
    let json: unknown
    try {
      json = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"))
    } catch {
      return Effect.fail(invalid(t, "upstream sent a response that is not JSON", response.status))
    }
    const decoded = t.provider.decodeResponse(json)
    if (Result.isFailure(decoded)) return Effect.fail(invalid(t, decoded.failure.message, response.status))
    t.collector.response(decoded.success)
    return Effect.succeed<Forwarded>(reply(
      200,
      { ...responseHeaders(response.headers, "own"), ...t.headers, "content-type": "application/json" },
      Buffer.from(JSON.stringify(t.caller.encodeResponse(decoded.success, t.request)))
    ))
  })

export const translateStream = (t: Translation, response: UpstreamResponse): Effect.Effect<Forwarded, UpstreamError> =>
  Effect.suspend(() => {
    const { ctx } = t
    const parser = framerFor(t.provider.framing)
    const decoder = t.provider.streamDecoder()
    const encoder = t.caller.streamEncoder(t.request)
    const head = { ...SSE_HEADERS, ...responseHeaders(response.headers, "own"), ...t.headers }
    let committed = false
    /** Frames encoded before the head is committed (the stream's preamble). */
    let pending = ""

    /**
     * Encodes events. The head is committed with the first event that carries
     * content or the finish (`commitsResponse`, the rule of every path): the
     * preamble alone commits nothing, so an upstream that sends
     * `message_start` and then `overloaded_error` is still a failed attempt.
     */
    const emit = (events: ReadonlyArray<ChatStreamEvent>): Effect.Effect<void, UpstreamError> => {
      for (const event of events) {
        t.collector.event(event)
        if (!committed && event.type === "error") return Effect.fail(inBandFailure(sourceOf(t), event.error))
        pending += encoder.push(event)
        if (!committed && commitsResponse(event)) {
          committed = true
          ctx.streamFormat = t.format
          commitHead(ctx, 200, head)
        }
      }
      if (!committed || pending === "") return Effect.void
      const out = pending
      pending = ""
      return writeText(ctx, out)
    }

    const pump = response.body.stream.pipe(
      // Whole arrays of chunks at a time: one Effect per pull, not per chunk.
      Stream.runForEachArray((chunks) => {
        const events: Array<ChatStreamEvent> = []
        for (const chunk of chunks) for (const sse of parser.push(chunk)) for (const event of decoder.push(sse)) events.push(event)
        if (parser.overflowed) {
          events.push({ type: "error", error: { type: "api_error", message: `upstream sent a stream event over ${MAX_EVENT_MIB} MiB`, status: 502, malformed: true } })
        }
        return emit(events)
      }),
      Effect.flatMap(() => {
        const events: Array<ChatStreamEvent> = []
        for (const sse of parser.end()) for (const event of decoder.push(sse)) events.push(event)
        for (const event of decoder.end()) events.push(event)
        return emit(events)
      })
    )

    return pump.pipe(
      Effect.catch((error: UpstreamError) => {
        if (!committed) return Effect.fail(error)
        t.collector.error = error.reason
        return emit([{
          type: "error",
          error: {
            type: error.timedOut ? "timeout_error" : "api_error",
            message: error.timedOut ? "upstream stream timed out" : "upstream stream failed",
            status: error.timedOut ? 504 : 502
          }
        }])
      }),
      Effect.ensuring(Effect.sync(() => {
        if (committed && !ctx.res.writableEnded) ctx.res.end()
      })),
      Effect.as(SENT)
    )
  })

/** The largest single event the translated path reads (the SSE parser's line limit). */
const MAX_EVENT_MIB = 16
