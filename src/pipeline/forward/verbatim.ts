/**
 * Forwarding an upstream success body to the caller byte for byte (the chat
 * fast path, and every other model endpoint), committed only when it is known
 * to be good: until then a failure is the attempt's, so routing can retry it
 * or fail over.
 *
 * Details
 * - A body that is not an event stream is held until it is complete (up to
 *   `HOLD_LIMIT`), then checked (a JSON body must parse); the attempt
 *   resolves with it unsent (a `Reply`), so the program can still look at it
 *   before it goes out. An upstream that stalls, resets or sends garbage
 *   before the end is a failed attempt, never a truncated 200. A body larger
 *   than the limit is streamed from there on (`Sent`).
 * - An event stream is held until its first content or finish (the one commit
 *   rule, `commitsResponse`, applied by the stream gate that decodes each
 *   chunk before it is written); an error event before that fails the
 *   attempt. After it, events are forwarded whole as they arrive: bytes after
 *   the last complete event wait for the rest of it, so an error frame can
 *   always follow cleanly; a single event larger than `EVENT_HOLD_CAP` is
 *   passed through as it comes. A stream that breaks (an error event, events
 *   that stop parsing, an end without its terminal event) ends there: the good
 *   events before the break, those in its chunk too, go out, then the error
 *   frame (the upstream's own event as it came, or the gateway's), and
 *   nothing after it, no `[DONE]`. Content before a break commits the stream
 *   even in the chunk the break is in, as on every path.
 * - After the first byte nothing fails the attempt: a failure is written as
 *   the stream's error frame (SSE) or ends the connection abruptly (other
 *   bodies), so the caller cannot mistake it for success.
 */
import { Effect } from "effect"
import type { OutgoingHttpHeaders } from "node:http"
import { streamErrorFrame, UpstreamError } from "../../domain/index.ts"
import type { CallerFormat, FailureSource, StreamError } from "../../domain/index.ts"
import { decodeWhole } from "../../providers/content-encoding.ts"
import { SseParser } from "../../providers/sse.ts"
import type { ChunkSink, UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { reply, SENT } from "../reply.ts"
import type { Reply, Sent } from "../reply.ts"
import { responseHeaders } from "./headers.ts"
import { callerSink, commitHead } from "./sink.ts"

/** What a forwarding attempt achieved: a complete body not yet sent (the reply), or a body already (being) sent. */
export type Forwarded = Reply<Uint8Array> | Sent

/** Where a chat stream failed (an error event, or an event that stopped parsing), as its gate saw it. */
export interface StreamBreak {
  readonly error: StreamError
  /**
   * How many of the events the failing chunk completed (at the end of the
   * body: that the end completed) came before the failing one. Those are good:
   * they still go to the caller.
   */
  readonly eventsBefore: number
  /** The events up to the break commit the response (`commitsResponse`): the break is mid-stream. */
  readonly committed: boolean
}

/**
 * Decodes a chat event stream chunk by chunk, before each chunk is written,
 * and tells when the response may be committed.
 */
export interface StreamGate {
  /** `commit` once the stream holds content or its finish; a `StreamBreak` when it failed in this chunk. */
  readonly push: (chunk: Uint8Array) => "hold" | "commit" | StreamBreak
  /** At the end of the body: the break when the stream ended before its terminal event (or its last event failed). */
  readonly end: () => StreamBreak | undefined
}

/** The gate of a stream the gateway does not read (a non-chat endpoint's events): it commits with its first byte. */
export const OPEN_GATE: StreamGate = { push: () => "commit", end: () => undefined }

export const isEventStream = (response: UpstreamResponse): boolean => {
  const type = response.headers["content-type"]
  return typeof type === "string" && type.startsWith("text/event-stream")
}

/** A non-stream body is held whole up to this size; a larger one is streamed. */
export const HOLD_LIMIT = 8 * 1024 * 1024
/** One event bigger than this (a streamed base64 image, say) is not held back whole. */
export const EVENT_HOLD_CAP = 16 * 1024 * 1024
/** A stream that sends this much before any content commits anyway (its preamble is not held forever). */
const PREAMBLE_CAP = 1024 * 1024

const LF = 10
const CR = 13

const isLineEnd = (byte: number | undefined): boolean => byte === LF || byte === CR

/** What ends an event: the end of the body ends the last one the same way. */
const EVENT_END = Buffer.from("\n\n")
const EMPTY = new Uint8Array(0)

/**
 * End of the last complete SSE event in `bytes` (after its blank line), or -1.
 * A blank line is two line ends in a row, each LF, CRLF or CR, in any mix
 * (`\n\n`, `\r\n\r\n`, `\n\r\n`, `\r\r\n`, `\r\n\r`, `\r\r`…).
 */
export const lastEventEnd = (bytes: Uint8Array): number => {
  for (let i = bytes.length - 1; i > 0; i--) {
    const byte = bytes[i]
    if (byte === LF) {
      // LF after LF; or a CRLF whose CR follows another line end.
      const before = bytes[i - 1]
      if (before === LF || (before === CR && i > 1 && isLineEnd(bytes[i - 2]))) return i + 1
    } else if (byte === CR && isLineEnd(bytes[i - 1])) {
      return i + 1
    }
  }
  return -1
}

/**
 * End, in `unsent` followed by `chunk`, of the first `count` events `chunk`
 * completes, counted as a parser that read `unsent` first counts them
 * (`unsent` begins where an event begins); -1 when the chunk completes fewer.
 * With `count` 0, the end of `unsent`'s own complete events.
 *
 * Only when a stream broke: a fresh parser reads the bytes again, a line at a
 * time. Gotcha: bytes of an event already passed through over `EVENT_HOLD_CAP`
 * are not in `unsent`; its tail reads as a line of no field, as it did to the
 * gate's parser, which drops a line over its own limit of the same size.
 */
export const eventsEnd = (unsent: Uint8Array, chunk: Uint8Array, count: number): number => {
  if (count === 0) return Math.max(0, lastEventEnd(unsent))
  const parser = new SseParser()
  parser.push(unsent)
  let seen = 0
  let from = 0
  while (from < chunk.length) {
    let to = from
    while (to < chunk.length && !isLineEnd(chunk[to])) to++
    to = Math.min(to + 1, chunk.length)
    seen += parser.push(chunk.subarray(from, to)).length
    from = to
    // (The LF of a CRLF that ended the event goes with it.)
    if (seen >= count) return unsent.length + (chunk[to - 1] === CR && chunk[to] === LF ? to + 1 : to)
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
        if (heldSize <= EVENT_HOLD_CAP) return true
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

/** An error an upstream reported inside its stream before any content: the attempt's failure, classified like a response. */
export const inBandFailure = (source: FailureSource, error: StreamError): UpstreamError => {
  if (error.malformed === true) return UpstreamError.fault(source, error.message, { status: 200 })
  const body = source.family === "anthropic"
    ? { type: "error", error: { type: error.type, message: error.message } }
    : { error: { message: error.message, type: error.type, param: null, code: error.code ?? null } }
  return UpstreamError.fromResponse(source, error.status ?? 500, Buffer.from(JSON.stringify(body)), { inStream: true })
}

/**
 * Forwards a chat event stream: held until the gate commits it, then event by
 * event. Fails only before the commit. A break ends the stream where it is:
 * the good events before it (in its chunk too) go out, then the error frame,
 * and nothing after it.
 */
export const forwardStream = (
  ctx: RequestContext,
  family: CallerFormat,
  source: FailureSource,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  gate: StreamGate
): Effect.Effect<Forwarded, UpstreamError> =>
  Effect.suspend(() => {
    let committed = false
    let preamble: Array<Uint8Array> = []
    let preambleSize = 0
    /** Set when the stream broke: before the commit it fails the attempt, after it the stream has ended. */
    let broken: StreamBreak | undefined
    const aligned = eventAlignedSink(callerSink(ctx))
    const commit = () => {
      committed = true
      ctx.streamFormat = family
      // The stream may end with bytes of the gateway's own (an error frame, a closing blank line):
      // the upstream's length would leave the caller waiting for bytes that never come.
      commitHead(ctx, response.status, { ...responseHeaders(response.headers, "events"), ...extraHeaders })
    }
    const endWith = (error: StreamError): void => {
      ctx.log.error_code = "upstream"
      if (!ctx.res.destroyed) ctx.res.end(streamErrorFrame(family, "upstream", error.message, error.status ?? 502))
    }
    /**
     * The stream broke in `chunk` (`EVENT_END` at the end of the body). With
     * nothing sent and nothing that commits, the attempt fails; otherwise the
     * bytes not yet written, up to the events before the break, go out, then
     * the error frame: the upstream's own error event as it came (same format,
     * docs/reference/gateway-spec.md §6.1.5), or the gateway's for a stream
     * that stopped parsing. Then the stream ends: nothing after the break (a
     * `[DONE]`) reaches the caller.
     */
    const breakOff = (cut: StreamBreak, chunk: Uint8Array): void => {
      broken = cut
      if (committed || cut.committed) {
        let unsent: Uint8Array
        if (committed) {
          unsent = aligned.takeHeld() ?? EMPTY
        } else {
          unsent = preamble.length === 1 ? preamble[0] : Buffer.concat(preamble)
          preamble = []
          commit()
        }
        const inBand = cut.error.malformed !== true
        const end = eventsEnd(unsent, chunk, inBand ? cut.eventsBefore + 1 : cut.eventsBefore)
        if (end > 0 && !ctx.res.destroyed) ctx.res.write(Buffer.concat([unsent, chunk]).subarray(0, end))
        if (inBand && end !== -1) ctx.res.end()
        else endWith(cut.error)
      }
      // Last: it settles the body's pipe, which may go on at once.
      response.body.abort()
    }
    const sink: ChunkSink = {
      write: (chunk) => {
        if (broken !== undefined) return true
        const verdict = gate.push(chunk)
        if (typeof verdict === "object") {
          breakOff(verdict, chunk)
          return true
        }
        if (committed) return aligned.write(chunk)
        preamble.push(chunk)
        preambleSize += chunk.byteLength
        if (verdict === "hold" && preambleSize <= PREAMBLE_CAP) return true
        commit()
        const held = preamble.length === 1 ? preamble[0] : Buffer.concat(preamble)
        preamble = []
        return aligned.write(held)
      },
      onDrain: aligned.onDrain
    }
    return response.body.pipe(sink).pipe(
      Effect.catch((error: UpstreamError) => {
        if (broken !== undefined) return Effect.void // our own abort after the gate said no
        if (!committed) return Effect.fail(error)
        return Effect.sync(() => {
          ctx.log.error_code = error.reason
          if (!ctx.res.destroyed) {
            ctx.res.end(streamErrorFrame(family, error.reason, error.timedOut ? "upstream stream timed out" : "upstream stream failed", error.timedOut ? 504 : 502))
          }
        })
      }),
      Effect.flatMap(() => {
        if (broken === undefined && !ctx.res.writableEnded) {
          const cut = gate.end()
          if (cut !== undefined) {
            breakOff(cut, EVENT_END)
          } else {
            if (!committed) {
              commit()
              for (const chunk of preamble) aligned.write(chunk)
            }
            // A last event the upstream did not close with a blank line is still an event.
            const rest = aligned.takeHeld()
            if (rest !== undefined) ctx.res.write(rest)
            ctx.res.end(rest === undefined ? undefined : "\n\n")
          }
        }
        // Nothing reached the caller: the break is the attempt's failure.
        if (broken !== undefined && !committed) return Effect.fail(inBandFailure(source, broken.error))
        return Effect.succeed(SENT)
      })
    )
  })

/** A held body is decoded (for its check) to at most this many bytes. */
const MAX_DECODED = 8 * HOLD_LIMIT

/** Whether the upstream labelled its body JSON (`application/json`, `…+json`). */
export const isJson = (response: UpstreamResponse): boolean => {
  const type = response.headers["content-type"]
  return typeof type === "string" && /[/+]json\b/i.test(type)
}

/**
 * Forwards a body that is not an event stream: held until complete and
 * checked, then handed back unsent. A body declared JSON must parse; with
 * `inspect` (chat) the body must be JSON whatever its type, and `inspect` sees
 * the parsed value (it may reject it with the reason). Past `HOLD_LIMIT` the
 * body is streamed as it comes, unchecked.
 */
export const forwardHeld = (
  ctx: RequestContext,
  source: FailureSource,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  inspect?: (json: unknown) => string | undefined
): Effect.Effect<Forwarded, UpstreamError> =>
  Effect.suspend(() => {
    const head = (): OutgoingHttpHeaders => ({ ...responseHeaders(response.headers, "verbatim"), ...extraHeaders })
    const caller = callerSink(ctx)
    const chunks: Array<Uint8Array> = []
    let size = 0
    let streaming = false
    const sink: ChunkSink = {
      write: (chunk) => {
        if (streaming) return caller.write(chunk)
        chunks.push(chunk)
        size += chunk.byteLength
        if (size <= HOLD_LIMIT) return true
        streaming = true
        commitHead(ctx, response.status, head())
        return caller.write(Buffer.concat(chunks, size))
      },
      onDrain: caller.onDrain
    }
    return response.body.pipe(sink).pipe(
      Effect.matchEffect({
        onFailure: (error) => {
          if (!streaming) return Effect.fail(error)
          return Effect.sync(() => {
            ctx.log.error_code = error.reason
            ctx.res.destroy()
          }).pipe(Effect.as(SENT))
        },
        onSuccess: () => {
          if (streaming) return Effect.sync(() => ctx.res.end()).pipe(Effect.as(SENT))
          const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)
          const problem = checkBody(response, body, inspect)
          if (problem !== undefined) return Effect.fail(UpstreamError.fault(source, problem, { status: response.status }))
          return Effect.succeed<Forwarded>(reply(response.status, head(), body))
        }
      })
    )
  })

/** Why a complete body cannot be a success, or undefined. */
const checkBody = (response: UpstreamResponse, body: Uint8Array, inspect?: (json: unknown) => string | undefined): string | undefined => {
  if (inspect === undefined && !isJson(response)) return undefined
  const decoded = decodeWhole(response.headers["content-encoding"], body, MAX_DECODED)
  if (decoded === undefined) return "upstream sent a body that does not decode"
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(decoded.buffer, decoded.byteOffset, decoded.byteLength).toString("utf8"))
  } catch {
    return "upstream sent a response that is not valid JSON"
  }
  return inspect?.(json)
}
