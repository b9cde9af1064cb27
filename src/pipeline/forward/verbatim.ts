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
 *   than the limit is streamed from there on (a reply with a stream body).
 * - An event stream is held until its first content or finish (the one commit
 *   rule, `commitsResponse`, applied by the stream gate that decodes each
 *   chunk before it is passed on, under the commit operator of ./commit.ts);
 *   an error event before that fails the
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
import { streamErrorFrame, UpstreamError } from "../../domain/index.ts"
import type { CallerFormat, FailureSource, StreamError } from "../../domain/index.ts"
import { decodeWhole } from "../../providers/content-encoding.ts"
import { SseParser } from "../../providers/sse.ts"
import type { UpstreamResponse } from "../../providers/transport.ts"
import type { RequestContext } from "../context.ts"
import { reply } from "../reply.ts"
import type { Reply, ReplyHeaders, ReplyStream } from "../reply.ts"
import { commitStream, holdBody, stopFrame } from "./commit.ts"
import type { ChunkOut, StreamStage, StreamStop } from "./commit.ts"
import { responseHeaders } from "./headers.ts"

/** What a forwarding attempt achieved: a complete body, or a committed stream; not yet sent. */
export type Forwarded = Reply<Uint8Array | ReplyStream>

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
  /** The break is continued elsewhere (`on_stream_break = "continue"`): the events before it go out, no error frame. */
  readonly continued?: true | undefined
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
  /** The committed stream was cut (the upstream failed, the gateway shut down): the error its frame reports. */
  readonly stopped?: ((error: StreamError) => void) | undefined
  /** Whether a committed stream cut by `reason` is continued elsewhere: then no error frame. */
  readonly continues?: ((reason: StreamStop) => boolean) | undefined
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

/**
 * Passes whole events on. Held bytes are kept as a list and each new chunk is
 * scanned once (with a 3-byte look-back for a boundary that straddles two
 * chunks, joined to the chunk's first two bytes only), so an event spread
 * over many chunks costs linear time and no copy of each chunk.
 */
class EventAligner {
  private held: Array<Uint8Array> = []
  private heldSize = 0

  /** Appends to `out` the bytes of `chunk` up to its last complete event (and those held before it). */
  write(chunk: Uint8Array, out: ChunkOut): void {
    let end: number
    if (this.heldSize === 0) {
      end = lastEventEnd(chunk)
    } else {
      end = lastEventEnd(chunk)
      // The scan looks back two bytes at most: only an end in the chunk's first two bytes may
      // need the held bytes before it, read with them (a few bytes copied, not the chunk).
      if (end === -1) {
        const last = this.held[this.held.length - 1]
        const lookBack = last.subarray(Math.max(0, last.length - 3))
        const at = lastEventEnd(Buffer.concat([lookBack, chunk.subarray(0, 2)]))
        end = at === -1 ? -1 : at - lookBack.length
      }
    }
    if (end === -1) {
      this.held.push(chunk)
      this.heldSize += chunk.length
      if (this.heldSize > EVENT_HOLD_CAP) this.release(out)
      return
    }
    if (this.held.length === 0) {
      // The usual case, whole events in: they go out as they came, no array made.
      if (end < chunk.length) {
        this.held.push(chunk.subarray(end))
        this.heldSize = chunk.length - end
        out.push(chunk.subarray(0, end))
      } else {
        out.push(chunk)
      }
      return
    }
    const parts = this.held
    this.held = []
    this.heldSize = 0
    if (end < chunk.length) {
      this.held.push(chunk.subarray(end))
      this.heldSize = chunk.length - end
    }
    parts.push(end === chunk.length ? chunk : chunk.subarray(0, end))
    out.push(parts.length === 1 ? parts[0] : Buffer.concat(parts))
  }

  private release(out: ChunkOut): void {
    out.push(this.held.length === 1 ? this.held[0] : Buffer.concat(this.held))
    this.held = []
    this.heldSize = 0
  }

  /** Bytes of an event the upstream never finished, taken out of the aligner. */
  takeHeld(): Uint8Array | undefined {
    if (this.heldSize === 0) return undefined
    const rest = this.held.length === 1 ? this.held[0] : Buffer.concat(this.held)
    this.held = []
    this.heldSize = 0
    return rest
  }
}

/** An error an upstream reported inside a 200 answer (its stream before any content, or a whole body: a safety block): the attempt's failure, classified like a response. */
export const inBandFailure = (source: FailureSource, error: StreamError): UpstreamError => {
  if (error.malformed === true) return UpstreamError.fault(source, error.message, { status: 200 })
  const body = source.family === "anthropic"
    ? { type: "error", error: { type: error.type, message: error.message } }
    : { error: { message: error.message, type: error.type, param: null, code: error.code ?? null } }
  return UpstreamError.fromResponse(source, error.status ?? 500, Buffer.from(JSON.stringify(body)), { inStream: true })
}

/**
 * The stage of a forwarded event stream: held until the gate commits it, then
 * event by event. A break ends the stream where it is: the good events before
 * it (in its chunk too) go out, then the error frame, and nothing after it.
 */
export const forwardStage = (ctx: RequestContext, family: CallerFormat, gate: StreamGate): StreamStage => {
  let committed = false
  let preamble: Array<Uint8Array> = []
  let preambleSize = 0
  const aligned = new EventAligner()
  const frame = (error: StreamError): string => {
    ctx.log.error_code = "upstream"
    return streamErrorFrame(family, "upstream", error.message, error.status ?? 502)
  }
  /**
   * The stream broke in `chunk` (`EVENT_END` at the end of the body). With
   * nothing that commits, the attempt fails; otherwise the bytes not yet
   * passed on, up to the events before the break, go out, then the error
   * frame: the upstream's own error event as it came (same format,
   * docs/reference/gateway-spec.md §6.1.5), or the gateway's for a stream
   * that stopped parsing. Then the stream ends: nothing after the break (a
   * `[DONE]`) reaches the caller.
   */
  const breakOff = (cut: StreamBreak, chunk: Uint8Array, out: ChunkOut): "end" | StreamError => {
    if (!committed && !cut.committed) return cut.error
    let unsent: Uint8Array
    if (committed) {
      unsent = aligned.takeHeld() ?? EMPTY
    } else {
      unsent = preamble.length === 1 ? preamble[0] : Buffer.concat(preamble)
      preamble = []
      committed = true
    }
    const inBand = cut.error.malformed !== true && cut.continued !== true
    const end = eventsEnd(unsent, chunk, inBand ? cut.eventsBefore + 1 : cut.eventsBefore)
    if (end > 0) out.push(Buffer.concat([unsent, chunk]).subarray(0, end))
    if (cut.continued !== true && (!inBand || end === -1)) out.push(Buffer.from(frame(cut.error)))
    return "end"
  }
  return {
    push: (chunk, out) => {
      const verdict = gate.push(chunk)
      if (typeof verdict === "object") return breakOff(verdict, chunk, out)
      if (committed) {
        aligned.write(chunk, out)
        return "commit"
      }
      preamble.push(chunk)
      preambleSize += chunk.byteLength
      if (verdict === "hold" && preambleSize <= PREAMBLE_CAP) return "hold"
      committed = true
      aligned.write(preamble.length === 1 ? preamble[0] : Buffer.concat(preamble), out)
      preamble = []
      return "commit"
    },
    end: (out) => {
      const cut = gate.end()
      if (cut !== undefined) return breakOff(cut, EVENT_END, out)
      if (!committed) {
        committed = true
        for (const chunk of preamble) aligned.write(chunk, out)
        preamble = []
      }
      // A last event the upstream did not close with a blank line is still an event.
      const rest = aligned.takeHeld()
      if (rest !== undefined) {
        out.push(rest)
        out.push(EVENT_END)
      }
      return "end"
    },
    stop: (reason, out) => {
      if (gate.continues?.(reason) === true) return
      const stop = stopFrame(reason)
      if (reason !== "shutdown") ctx.log.error_code = stop.reason
      gate.stopped?.({ type: stop.timedOut ? "timeout_error" : "api_error", message: stop.message, status: stop.status })
      out.push(Buffer.from(streamErrorFrame(family, stop.reason, stop.message, stop.status)))
    }
  }
}

/**
 * Forwards an event stream under the commit rule: fails only before the
 * commit; after it the answer is a reply whose body is the stream.
 */
export const forwardStream = (
  ctx: RequestContext,
  family: CallerFormat,
  source: FailureSource,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  gate: StreamGate
): Effect.Effect<Reply<ReplyStream>, UpstreamError> =>
  Effect.map(
    commitStream(ctx, response.body, forwardStage(ctx, family, gate), (error) => inBandFailure(source, error)),
    // The stream may end with bytes of the gateway's own (an error frame, a closing blank line):
    // the upstream's length would leave the caller waiting for bytes that never come.
    (body) => reply(response.status, { ...responseHeaders(response.headers, "events"), ...extraHeaders }, body)
  )

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
 * body is streamed as it comes, unchecked: a failure after that cuts the
 * connection (the reply's writer does it).
 */
export const forwardHeld = (
  source: FailureSource,
  response: UpstreamResponse,
  extraHeaders: Readonly<Record<string, string>>,
  inspect?: (json: unknown) => string | undefined
): Effect.Effect<Reply<Uint8Array | ReplyStream>, UpstreamError> =>
  Effect.flatMap(heldWhole(source, response), (body): Effect.Effect<Reply<Uint8Array | ReplyStream>, UpstreamError> => {
    const head: ReplyHeaders = { ...responseHeaders(response.headers, "verbatim"), ...extraHeaders }
    if (!(body instanceof Uint8Array)) return Effect.succeed(reply(response.status, head, body))
    const problem = checkBody(response, body, inspect)
    if (problem !== undefined) return Effect.fail(UpstreamError.fault(source, problem, { status: response.status }))
    return Effect.succeed(reply(response.status, head, body))
  })

/**
 * The body held whole up to `HOLD_LIMIT`, streamed past it. A body whose
 * length the upstream declared within the limit is simply read whole (no
 * stage, no commit machinery: most JSON answers).
 */
const heldWhole = (source: FailureSource, response: UpstreamResponse): Effect.Effect<Uint8Array | ReplyStream, UpstreamError> =>
  Number(response.headers["content-length"]) <= HOLD_LIMIT
    ? response.body.readAll(HOLD_LIMIT)
    : holdBody(undefined, response.body, heldStage(HOLD_LIMIT), (error) => inBandFailure(source, error))

/**
 * The stage of a body held until `limit` bytes: below it nothing commits (the
 * body comes whole when the upstream ends); past it, it streams from there on.
 * A failure after that cuts the body.
 */
export const heldStage = (limit: number): StreamStage => {
  let size = 0
  return {
    push: (chunk, out) => {
      out.push(chunk)
      size += chunk.byteLength
      return size <= limit ? "hold" : "commit"
    },
    end: () => "end",
    stop: undefined
  }
}

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
