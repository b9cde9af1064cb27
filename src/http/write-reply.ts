/**
 * The one writer of a `Reply` to the caller: the head in one `writeHead`
 * (with `x-request-id`, and `content-length` for a value body), then the body
 * whole, or streamed with backpressure. Nothing else writes a response.
 *
 * Details
 * - A response already started or a socket already gone is never written
 *   twice.
 * - Answered before the request body was read to its end (a refusal), the
 *   connection closes rather than read the rest, after a short linger.
 * - A stream body is written as its chunks come, waiting for `drain` when the
 *   socket's buffer is full, so a slow reader pauses the upstream. A caller
 *   that hangs up interrupts the request's fiber, and with it the stream (its
 *   upstream is aborted by its own finalizer). A stream that fails after the
 *   head cuts the connection: the caller cannot mistake it for a whole answer.
 */
import { Effect, Stream } from "effect"
import type { Socket } from "node:net"
import { isValueBody, logFailure, pushHeaders, pushSourceOf } from "../pipeline/index.ts"
import { onExitInPlace } from "../domain/index.ts"
import type { AnyGatewayFailure } from "../domain/index.ts"
import type { PushSource, Reply, ReplyStream } from "../pipeline/index.ts"
import type { ServerResponse } from "node:http"
import type { EdgeContext } from "./context.ts"

/** How long, and how many more bytes, a connection closed after a refusal lingers. */
const LINGER_MS = 1000
const LINGER_BYTES = 8 * 1024 * 1024

/**
 * Closing a connection the caller is still writing to: our FIN goes out but
 * the socket is not destroyed at once (which would reset it, and a reset can
 * make the caller lose the answer it has not read yet). Reading stops, and the
 * socket is destroyed after `LINGER_MS`, or as soon as `LINGER_BYTES` more
 * arrived: never the gigabyte the caller declared.
 */
function lingeringDestroySoon(this: Socket): void {
  this.end()
  this.pause()
  const start = this.bytesRead
  const watch = setInterval(() => {
    if (this.bytesRead - start > LINGER_BYTES) this.destroy()
  }, 50)
  const stop = setTimeout(() => this.destroy(), LINGER_MS)
  watch.unref()
  stop.unref()
  this.once("close", () => {
    clearInterval(watch)
    clearTimeout(stop)
  })
}

const lingerThenClose = (socket: Socket | null | undefined): void => {
  if (socket != null) socket.destroySoon = lingeringDestroySoon
}

/** A request body is declared and not yet all received. */
const bodyPending = (ctx: EdgeContext): boolean => {
  const { req } = ctx
  if (req.complete) return false
  return req.headers["transfer-encoding"] !== undefined || (req.headers["content-length"] !== undefined && req.headers["content-length"] !== "0")
}

/** Writes the head, with `head` already holding the framing headers; false when the response cannot take one. */
const writeHead = (ctx: EdgeContext, reply: Reply, head: Array<string>): boolean => {
  const { res } = ctx
  if (res.headersSent || res.destroyed) return false
  head.push("x-request-id", ctx.requestId)
  if (bodyPending(ctx)) {
    head.push("connection", "close")
    lingerThenClose(res.socket)
  }
  const sized = head[0] === "content-length"
  // One writeHead with a flat list: Node's fast path when nothing was set before (no header map).
  pushHeaders(head, reply.headers, ctx.replyHeaders, sized)
  res.writeHead(reply.status, head)
  return true
}

/** Writes a reply whose body is a value: one head, one write. */
export const writeWhole = (ctx: EdgeContext, reply: Reply<string | Uint8Array>): void => {
  const { body } = reply
  const head = ["content-length", String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength)]
  if (writeHead(ctx, reply, head)) ctx.res.end(body)
}

/** Waits until the response can take more (or is gone). */
const drained = (res: ServerResponse): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const done = () => {
      res.off("drain", done)
      res.off("close", done)
      resume(Effect.void)
    }
    res.once("drain", done)
    res.once("close", done)
    return Effect.sync(() => {
      res.off("drain", done)
      res.off("close", done)
    })
  })

/** How a stream body ends on the socket: `end` after the last byte; a failure cuts the connection. */
const finishStream = (ctx: EdgeContext) =>
  Effect.matchEffect({
    // Done as the outcome is known: no effect of its own to run.
    onFailure: (failure: AnyGatewayFailure) => {
      logFailure(ctx, failure)
      ctx.res.destroy()
      return Effect.void
    },
    onSuccess: () => {
      ctx.res.end()
      return Effect.void
    }
  })

/** Bytes of one turn a push body gathers before it asks its source to wait for the socket. */
const TURN_BYTES = 64 * 1024

/**
 * The fast lane of a push body: its source hands each chunk over in the
 * callback that produced it (one Effect for the whole body, none per chunk),
 * and the chunks of one turn go to the socket as one write at the turn's end
 * (a microtask): an upstream read carrying twenty events is one chunk of the
 * caller's response, not twenty, each of which cost Node four socket writes
 * of framing. A full socket pauses the source until `drain`. Interrupted (the
 * caller hung up), the source is stopped.
 */
const pushToSocket = (res: ServerResponse, source: PushSource): Effect.Effect<void, AnyGatewayFailure> =>
  Effect.callback<void, AnyGatewayFailure>((resume) => {
    let turn: Array<Uint8Array> | undefined
    let turnBytes = 0
    /** The socket's buffer was full at the last write: the source waits. */
    let full = false
    const flush = (): void => {
      const chunks = turn
      if (chunks === undefined) return
      turn = undefined
      const bytes = turnBytes
      turnBytes = 0
      if (res.destroyed) return
      full = !res.write(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, bytes))
    }
    source.start({
      write: (chunk) => {
        if (res.destroyed) return true
        if (turn === undefined) {
          turn = [chunk]
          queueMicrotask(flush)
        } else {
          turn.push(chunk)
        }
        turnBytes += chunk.byteLength
        return !full && turnBytes < TURN_BYTES
      },
      onDrain: (go) => {
        flush()
        const again = () => {
          full = false
          go()
        }
        if (res.writableNeedDrain) res.once("drain", again)
        else queueMicrotask(again)
      },
      end: () => {
        flush()
        resume(Effect.void)
      },
      fail: (failure) => {
        flush()
        resume(Effect.fail(failure))
      }
    })
    return Effect.sync(source.stop)
  })

/** Writes a stream body's bytes with backpressure: a push body's on its fast lane, then what follows them. */
const sendBody = (res: ServerResponse, body: ReplyStream): Effect.Effect<void, AnyGatewayFailure> => {
  const push = pushSourceOf(body)
  if (push === undefined) {
    // Whole arrays of chunks at a time: one Effect per pull, not per chunk.
    return Stream.runForEachArray(body, (chunks) => {
      let room = true
      for (const chunk of chunks) room = res.write(chunk)
      return room || res.destroyed ? Effect.void : drained(res)
    })
  }
  const { onExit, next } = push
  const pushed = pushToSocket(res, push.source)
  const sent = next === undefined ? pushed : Effect.andThen(pushed, Effect.suspend(() => {
    const tail = next()
    return tail === undefined ? Effect.void : sendBody(res, tail)
  }))
  return onExit === undefined ? sent : onExitInPlace(sent, onExit)
}

const writeStream = (ctx: EdgeContext, reply: Reply, body: ReplyStream): Effect.Effect<void> => {
  if (!writeHead(ctx, reply, [])) return Effect.void
  ctx.streaming = true
  return finishStream(ctx)(sendBody(ctx.res, body))
}

/**
 * Writes a reply to the caller; a stream body as it comes. A whole body is
 * written as this is called: call it where the reply is had (a `flatMap`'s
 * continuation), not ahead of time.
 */
export const writeReply = (ctx: EdgeContext, reply: Reply): Effect.Effect<void> => {
  const { body } = reply
  if (!isValueBody(body)) return writeStream(ctx, reply, body)
  writeWhole(ctx, reply as Reply<string | Uint8Array>)
  return Effect.void
}
