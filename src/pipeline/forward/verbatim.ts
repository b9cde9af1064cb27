/**
 * Forwarding an upstream success body to the caller byte for byte, as it
 * arrives (the chat fast path, and every other model endpoint).
 *
 * Details
 * - The response head is committed with the first body byte, not with the
 *   upstream's head: an upstream that answers 200 and then drops before
 *   sending anything is still a failed attempt (retried or failed over).
 * - Server-Sent Events are forwarded event by event: bytes after the last
 *   complete event wait for the rest of it (a partial frame is useless to the
 *   caller), so an error frame can always follow cleanly. A single event
 *   larger than `HOLD_CAP` is passed through as it comes.
 * - After the first byte nothing fails the attempt: a failure is written as
 *   the stream's error frame (SSE) or ends the connection abruptly (other
 *   bodies), so the caller cannot mistake it for success.
 */
import { Effect } from "effect"
import { streamErrorFrame } from "../../domain/index.ts"
import type { StreamError, UpstreamError, WireFamily } from "../../domain/index.ts"
import type { ChunkSink, UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { responseHeaders } from "./headers.ts"
import { abortWithCaller, callerSink, commitHead } from "./sink.ts"

/** Reads a copy of a forwarded body (after each chunk was written). */
export interface BodyTap {
  readonly chunk: (chunk: Uint8Array) => void
  /** At the end of the body; returns the error when a stream ended before its terminal event. */
  readonly end: () => StreamError | undefined
}

export const isEventStream = (response: UpstreamResponse): boolean => {
  const type = response.headers["content-type"]
  return typeof type === "string" && type.startsWith("text/event-stream")
}

const LF = 10
const CR = 13
/** One event bigger than this (a streamed base64 image, say) is not held back whole. */
const HOLD_CAP = 16 * 1024 * 1024

/** End of the last complete SSE event in `bytes` (after its blank line), or -1. */
const lastEventEnd = (bytes: Uint8Array): number => {
  for (let i = bytes.length - 1; i > 0; i--) {
    if (bytes[i] === LF && (bytes[i - 1] === LF || (bytes[i - 1] === CR && i > 2 && bytes[i - 2] === LF && bytes[i - 3] === CR))) return i + 1
    if (bytes[i] === CR && bytes[i - 1] === CR) return i + 1
  }
  return -1
}

interface AlignedSink extends ChunkSink {
  /** Bytes of an event the upstream never finished, taken out of the sink. */
  readonly takeHeld: () => Uint8Array | undefined
}

/**
 * Passes whole events on. Held bytes are kept as a list and each new chunk is
 * scanned once (with a 3-byte look-back for a boundary that straddles two
 * chunks), so an event spread over many chunks costs linear time.
 */
const eventAlignedSink = (sink: ChunkSink): AlignedSink => {
  let held: Array<Uint8Array> = []
  let heldSize = 0
  const release = (parts: Array<Uint8Array>): boolean => sink.write(parts.length === 1 ? parts[0] : Buffer.concat(parts))
  return {
    write: (chunk) => {
      let end: number
      if (heldSize === 0) {
        end = lastEventEnd(chunk)
      } else {
        const last = held[held.length - 1]
        const lookBack = last.subarray(Math.max(0, last.length - 3))
        const at = lastEventEnd(Buffer.concat([lookBack, chunk]))
        end = at === -1 ? -1 : at - lookBack.length
      }
      if (end === -1) {
        held.push(chunk)
        heldSize += chunk.length
        if (heldSize <= HOLD_CAP) return true
        const parts = held
        held = []
        heldSize = 0
        return release(parts)
      }
      const parts = held
      held = []
      heldSize = 0
      if (end < chunk.length) {
        held.push(chunk.subarray(end))
        heldSize = chunk.length - end
      }
      parts.push(end === chunk.length ? chunk : chunk.subarray(0, end))
      return release(parts)
    },
    onDrain: sink.onDrain,
    takeHeld: () => {
      if (heldSize === 0) return undefined
      const rest = held.length === 1 ? held[0] : Buffer.concat(held)
      held = []
      heldSize = 0
      return rest
    }
  }
}

/**
 * Forwards the upstream's success response. Fails only while nothing has
 * reached the caller (so the attempt can be retried); never after.
 */
export const forwardVerbatim = (
  ctx: RequestContext,
  family: WireFamily,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  makeTap?: (sse: boolean) => BodyTap
): Effect.Effect<void, UpstreamError> => {
  const sse = isEventStream(response)
  abortWithCaller(ctx, response.body)
  let committed = false
  const commit = () => {
    if (committed) return
    committed = true
    commitHead(ctx, response.status, { ...responseHeaders(response.headers, true), ...extraHeaders })
  }
  const caller = callerSink(ctx)
  const committing: ChunkSink = {
    write: (chunk) => {
      commit()
      return caller.write(chunk)
    },
    onDrain: caller.onDrain
  }
  const tap = makeTap?.(sse)
  const aligned = sse ? eventAlignedSink(committing) : undefined
  return response.body.pipe(aligned ?? committing, tap?.chunk).pipe(
    Effect.matchEffect({
      onSuccess: () =>
        Effect.sync(() => {
          commit()
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
      onFailure: (error: UpstreamError) => {
        if (!committed) return Effect.fail(error)
        return Effect.sync(() => {
          ctx.log.error_code = error.reason
          if (sse && !ctx.res.destroyed) {
            ctx.res.end(streamErrorFrame(family, error.reason, error.timedOut ? "upstream stream timed out" : "upstream stream failed", error.timedOut ? 504 : 502))
          } else {
            ctx.res.destroy()
          }
        })
      }
    })
  )
}
