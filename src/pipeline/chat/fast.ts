/**
 * The fast path (caller and provider speak the same wire family, spec 6.1.3):
 * the upstream body, JSON or SSE, goes to the caller byte for byte as it
 * arrives. A tap decodes a copy after each chunk was written, for the log
 * line, telemetry and the output guardrail; it never delays a chunk.
 */
import { Effect } from "effect"
import { streamErrorFrame } from "../../domain/index.ts"
import type { StreamError, UpstreamError, WireFamily } from "../../domain/index.ts"
import { PROVIDER_CODECS } from "../../formats/index.ts"
import { summarizeChatJson } from "../../formats/summary.ts"
import { SseParser } from "../../providers/sse.ts"
import type { ChunkSink, UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { ResponseCollector } from "./collector.ts"
import { responseHeaders } from "./headers.ts"
import { abortWithCaller, callerSink, commitHead } from "./sink.ts"

const JSON_TAP_LIMIT = 4 * 1024 * 1024

export interface BodyTap {
  readonly chunk: (chunk: Uint8Array) => void
  /** At the end of the body; returns the error when a stream ended before its terminal event. */
  readonly end: () => StreamError | undefined
}

/** A tap that decodes a forwarded chat body into the collector. */
export const chatTap = (family: WireFamily, sse: boolean, collector: ResponseCollector): BodyTap => {
  const codec = PROVIDER_CODECS[family]
  if (sse) {
    const parser = new SseParser()
    const decoder = codec.streamDecoder()
    const feed = (events: ReadonlyArray<{ readonly event?: string | undefined; readonly data: string }>) => {
      for (const event of events) for (const decoded of decoder.push(event)) collector.event(decoded)
    }
    return {
      chunk: (chunk: Uint8Array) => feed(parser.push(chunk)),
      end: () => {
        feed(parser.end())
        let cut: StreamError | undefined
        for (const decoded of decoder.end()) {
          collector.event(decoded)
          if (decoded.type === "error") cut = decoded.error
        }
        return cut
      }
    }
  }
  const chunks: Array<Uint8Array> = []
  let size = 0
  return {
    chunk: (chunk: Uint8Array) => {
      size += chunk.byteLength
      if (size <= JSON_TAP_LIMIT) chunks.push(chunk)
    },
    end: () => {
      if (size > JSON_TAP_LIMIT) return undefined
      const body = chunks.length === 1 ? Buffer.from(chunks[0].buffer, chunks[0].byteOffset, chunks[0].byteLength) : Buffer.concat(chunks)
      collector.summary(summarizeChatJson(family, body.toString("utf8")))
      return undefined
    }
  }
}

export const isEventStream = (response: UpstreamResponse): boolean => {
  const type = response.headers["content-type"]
  return typeof type === "string" && type.startsWith("text/event-stream")
}

/**
 * Commits the upstream's success head and forwards its body. Never fails: a
 * failure after the head is written as the stream's error frame (SSE) or ends
 * the connection abruptly (JSON), so the caller cannot mistake it for success.
 */
const LF = 10
const CR = 13

/** End of the last complete SSE event in `bytes` (after its blank line), or -1. */
const lastEventEnd = (bytes: Uint8Array): number => {
  for (let i = bytes.length - 1; i > 0; i--) {
    if (bytes[i] === LF && (bytes[i - 1] === LF || (bytes[i - 1] === CR && i > 2 && bytes[i - 2] === LF && bytes[i - 3] === CR))) return i + 1
    if (bytes[i] === CR && bytes[i - 1] === CR) return i + 1
  }
  return -1
}

/**
 * Forwards whole SSE events only: bytes after the last complete event wait
 * for the rest of their event (a partial frame is useless to the caller
 * anyway). So an error frame can always follow cleanly if the upstream breaks
 * mid-frame, instead of being glued to half an event.
 */
const eventAlignedSink = (sink: ChunkSink): ChunkSink & { readonly takeHeld: () => Uint8Array | undefined } => {
  let held: Uint8Array | undefined
  return {
    write: (chunk) => {
      const bytes = held === undefined ? chunk : Buffer.concat([held, chunk])
      const end = lastEventEnd(bytes)
      if (end === -1) {
        held = bytes
        return true
      }
      held = end === bytes.length ? undefined : bytes.subarray(end)
      return sink.write(end === bytes.length ? bytes : bytes.subarray(0, end))
    },
    onDrain: sink.onDrain,
    takeHeld: () => {
      const rest = held
      held = undefined
      return rest
    }
  }
}

export const forwardVerbatim = (
  ctx: RequestContext,
  family: WireFamily,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  makeTap?: (sse: boolean) => BodyTap
): Effect.Effect<void> => {
  const sse = isEventStream(response)
  abortWithCaller(ctx, response.body)
  commitHead(ctx, response.status, { ...responseHeaders(response.headers, true), ...extraHeaders })
  const tap = makeTap?.(sse)
  const aligned = sse ? eventAlignedSink(callerSink(ctx)) : undefined
  return response.body.pipe(aligned ?? callerSink(ctx), tap?.chunk).pipe(
    Effect.matchEffect({
      onSuccess: () =>
        Effect.sync(() => {
          const cut = tap?.end()
          if (sse && cut !== undefined) {
            // The upstream ended without its terminal event: never a normal stop (translation.md §11.3).
            ctx.log.error_code = "upstream"
            ctx.res.end(streamErrorFrame(family, "upstream", cut.message, cut.status ?? 502))
          } else {
            // A last event the upstream did not close with a blank line is still an event.
            const held = aligned?.takeHeld()
            if (held !== undefined) ctx.res.write(held)
            ctx.res.end(held === undefined ? undefined : "\n\n")
          }
        }),
      onFailure: (error: UpstreamError) =>
        Effect.sync(() => {
          ctx.log.error_code = error.reason
          if (sse && !ctx.res.destroyed) {
            ctx.res.end(streamErrorFrame(family, error.reason, error.timedOut ? "upstream stream timed out" : "upstream stream failed", error.timedOut ? 504 : 502))
          } else {
            ctx.res.destroy()
          }
        })
    })
  )
}
