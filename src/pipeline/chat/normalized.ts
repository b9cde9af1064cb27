/**
 * The normalized path (caller and provider speak different wire families,
 * docs/reference/gateway-spec.md §6.1.3): the upstream response is decoded into canonical form and
 * re-encoded in the caller's format, chunk by chunk as an Effect Stream for
 * streams. Nothing waits for the whole response.
 *
 * The answer commits with the first translated content (or the finish), not
 * with the upstream's head (the commit operator, ../forward/commit.ts): an
 * upstream that fails before producing any (a 200, `message_start`, then
 * `overloaded_error`; a dropped connection) is still retried or failed over.
 */
import { Effect, Result } from "effect"
import { commitsResponse, UpstreamError } from "../../domain/index.ts"
import type { ChatRequest, ChatStreamEvent, FailureSource, ProviderFamily, StreamError } from "../../domain/index.ts"
import type { CallerCodec, ProviderCodec } from "../../formats/index.ts"
import type { UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import type { ResponseCollector } from "./collector.ts"
import type { StreamSplice } from "./continuation.ts"
import { decodingStage } from "./decoding.ts"
import { commitStream, inBandFailure, responseHeaders, SSE_HEADERS, stopFrame } from "../forward/index.ts"
import { reply } from "../reply.ts"
import type { ChunkOut, Forwarded, StreamStage } from "../forward/index.ts"

const RESPONSE_LIMIT = 32 * 1024 * 1024

export interface Translation {
  readonly ctx: RequestContext
  readonly providerId: string
  readonly providerFamily: ProviderFamily
  readonly provider: ProviderCodec
  readonly caller: CallerCodec
  readonly request: ChatRequest
  readonly headers: Readonly<Record<string, string>>
  readonly collector: ResponseCollector
  /** When a committed stream that breaks is continued elsewhere: the seam it watches (its encoder is the one written with). */
  readonly splice?: StreamSplice | undefined
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
    if (Result.isFailure(decoded)) {
      const { reported } = decoded.failure
      return Effect.fail(reported === undefined ? invalid(t, decoded.failure.message, response.status) : inBandFailure(sourceOf(t), reported))
    }
    t.collector.response(decoded.success)
    return Effect.succeed<Forwarded>(reply(
      200,
      { ...responseHeaders(response.headers, "own"), ...t.headers, "content-type": "application/json" },
      Buffer.from(JSON.stringify(t.caller.encodeResponse(decoded.success, t.request)))
    ))
  })

export const translateStage = (t: Translation): StreamStage => {
  const { splice } = t
  const encoder = splice?.encoder ?? t.caller.streamEncoder(t.request)
  let committed = false
  let stopped = false
  const emit = (events: ReadonlyArray<ChatStreamEvent>, out: ChunkOut): "hold" | "commit" | "end" | StreamError => {
    let frames = ""
    let continued = false
    for (const event of events) {
      if (splice !== undefined) {
        // A break the splice takes is continued elsewhere: no error frame, nothing after it.
        if (committed && !stopped && event.type === "error" && splice.takes(event.error)) {
          continued = true
          break
        }
        splice.observe(event)
      }
      t.collector.event(event)
      if (!committed && event.type === "error") return event.error
      frames += encoder.push(event)
      if (!committed && commitsResponse(event)) committed = true
    }
    if (frames !== "") out.push(Buffer.from(frames))
    return continued ? "end" : committed ? "commit" : "hold"
  }
  return decodingStage(t.provider, emit, (reason, out) => {
    if (splice?.takes(reason) === true) return
    const stop = stopFrame(reason)
    if (reason !== "shutdown") t.collector.error = stop.reason
    // The splice declined this stop: its error frame is written, not offered to it again.
    stopped = true
    emit([{ type: "error", error: { type: stop.timedOut ? "timeout_error" : "api_error", message: stop.message, status: stop.status } }], out)
  })
}

/** A translated stream under the commit rule: fails only before the commit; after it a reply whose body is the stream. */
export const translateStream = (t: Translation, response: UpstreamResponse): Effect.Effect<Forwarded, UpstreamError> =>
  Effect.map(
    commitStream(t.ctx, response.body, translateStage(t), (error) => inBandFailure(sourceOf(t), error)),
    (body) => reply(200, { ...SSE_HEADERS, ...responseHeaders(response.headers, "own"), ...t.headers }, body)
  )
