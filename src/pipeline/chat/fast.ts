/**
 * The fast path (caller and provider speak the same wire family, spec 6.1.3):
 * the upstream body, JSON or SSE, goes to the caller byte for byte as it
 * arrives. A tap decodes a copy after each chunk was written, for the log
 * line, telemetry and the output guardrail; it never delays a chunk.
 */
import { Effect } from "effect"
import { streamErrorFrame } from "../../domain/index.ts"
import type { UpstreamError, WireFamily } from "../../domain/index.ts"
import { PROVIDER_CODECS } from "../../formats/index.ts"
import { SseParser } from "../../providers/sse.ts"
import type { UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { ResponseCollector } from "./collector.ts"
import { responseHeaders } from "./headers.ts"
import { callerSink, commitHead } from "./sink.ts"

const JSON_TAP_LIMIT = 4 * 1024 * 1024

export interface BodyTap {
  readonly chunk: (chunk: Uint8Array) => void
  readonly end: () => void
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
      if (size > JSON_TAP_LIMIT) return
      try {
        const decoded = codec.decodeResponse(JSON.parse(Buffer.concat(chunks).toString("utf8")))
        if (decoded.ok) collector.response(decoded.value)
      } catch {
        // Not ours to judge: the caller got the upstream's bytes as they were.
      }
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
export const forwardVerbatim = (
  ctx: RequestContext,
  family: WireFamily,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  makeTap?: (sse: boolean) => BodyTap
): Effect.Effect<void> => {
  const sse = isEventStream(response)
  commitHead(ctx, response.status, { ...responseHeaders(response.headers, true), ...extraHeaders })
  const tap = makeTap?.(sse)
  return response.body.pipe(callerSink(ctx), tap?.chunk).pipe(
    Effect.matchEffect({
      onSuccess: () =>
        Effect.sync(() => {
          ctx.res.end()
          tap?.end()
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
