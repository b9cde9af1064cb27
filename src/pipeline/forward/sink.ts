/**
 * Writing to the caller: a backpressure-aware sink over the Node response, and
 * the one place a response head is committed. After the head nothing can be
 * retried; a later failure becomes the stream's error frame.
 */
import { Effect } from "effect"
import type { OutgoingHttpHeaders } from "node:http"
import type { ChunkSink } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { pushHeaders } from "../reply.ts"

export const callerSink = (ctx: RequestContext): ChunkSink => ({
  write: (chunk) => ctx.res.write(chunk),
  onDrain: (resume) => {
    ctx.res.once("drain", resume)
  }
})

/** Writes text, waiting for `drain` when the socket's buffer is full. */
export const writeText = (ctx: RequestContext, text: string): Effect.Effect<void> =>
  ctx.res.write(text) || ctx.res.destroyed
    ? Effect.void
    : Effect.callback<void>((resume) => {
      const done = () => {
        ctx.res.off("drain", done)
        ctx.res.off("close", done)
        resume(Effect.void)
      }
      ctx.res.once("drain", done)
      ctx.res.once("close", done)
    })

export const commitHead = (ctx: RequestContext, status: number, headers: OutgoingHttpHeaders): void => {
  const { res } = ctx
  if (res.headersSent) return
  // One writeHead with a flat list: Node's fast path when nothing was set before (no header map).
  const flat: Array<string> = []
  pushHeaders(flat, headers, ctx.replyHeaders)
  flat.push("x-request-id", ctx.requestId)
  res.writeHead(status, flat)
}

export const SSE_HEADERS: OutgoingHttpHeaders = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}
