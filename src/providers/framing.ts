/**
 * How the bytes of an upstream chat stream are cut into the events a wire
 * family's stream decoder reads: SSE (every family but Bedrock), or Amazon's
 * binary event stream (`application/vnd.amazon.eventstream`, ConverseStream).
 * A provider codec names its framing; the normalized path asks `framerFor` for
 * one per stream. Both framers give `SseEvent`s: an event-stream message
 * becomes `{event: its :event-type (or :exception-type), data: its payload}`.
 *
 * The event-stream codec is loaded only by a gateway that has a provider that
 * needs it (`loadEventStreamCodec`, called when such a provider is compiled),
 * long before any of its streams arrives; until then a stream in that framing
 * fails as a server error (and is retried like one).
 */
import type { EventStreamCodec } from "@smithy/eventstream-codec"
import type { SseEvent } from "../formats/index.ts"
import { SseParser } from "./sse.ts"

/** Bytes in, complete events out; one per stream. */
export interface Framer {
  push(chunk: Uint8Array): Array<SseEvent>
  end(): Array<SseEvent>
  /** Set when an event outgrew the framer's limit (the stream is broken). */
  readonly overflowed: boolean
}

export type Framing = "sse" | "aws-eventstream"

const decoder = new TextDecoder()

/** A message longer than this is not one anyone sends: the stream is broken. */
const MAX_MESSAGE = 16 * 1024 * 1024
/** Total length, headers length, prelude CRC, message CRC: the smallest message has no headers and no body. */
const MIN_MESSAGE = 16

/**
 * Binary event-stream messages as events. Each message starts with its total
 * length (big-endian uint32): bytes are kept until a message is whole, then
 * decoded (CRCs checked) by `@smithy/eventstream-codec`. A message that does not
 * decode, or claims a length out of bounds, ends the stream as a server error.
 */
let loaded: EventStreamCodec | undefined
let loading: Promise<void> | undefined

/** Loads the event-stream codec once (a provider that streams in `aws-eventstream` is being compiled). */
export const loadEventStreamCodec = (): Promise<void> =>
  loading ??= import("./eventstream-codec.ts").then(
    ({ makeEventStreamCodec }) => {
      loaded = makeEventStreamCodec()
    },
    () => {
      // Not loaded: streams in this framing fail as server errors; the next compile tries again.
      loading = undefined
    }
  )

class EventStreamFramer implements Framer {
  private readonly codec = loaded
  private pending: Buffer = Buffer.alloc(0)
  private broken = false
  overflowed = false

  push(chunk: Uint8Array): Array<SseEvent> {
    if (this.broken) return []
    const codec = this.codec
    if (codec === undefined) return this.fail()
    this.pending = this.pending.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.pending, chunk])
    const out: Array<SseEvent> = []
    while (this.pending.length >= 4) {
      const length = this.pending.readUInt32BE(0)
      if (length < MIN_MESSAGE || length > MAX_MESSAGE) {
        this.overflowed = length > MAX_MESSAGE
        return [...out, ...this.fail()]
      }
      if (this.pending.length < length) break
      const message = this.pending.subarray(0, length)
      this.pending = this.pending.subarray(length)
      const event = eventOf(codec, message)
      if (event === undefined) return [...out, ...this.fail()]
      out.push(event)
    }
    return out
  }

  end(): Array<SseEvent> {
    // Bytes of a message that never completed: the stream was cut inside it.
    return this.broken || this.pending.length === 0 ? [] : this.fail()
  }

  private fail(): Array<SseEvent> {
    this.broken = true
    return [{ event: "internalServerException", data: JSON.stringify({ message: "upstream sent a malformed event-stream frame" }) }]
  }
}

/** One whole message as an event; undefined when it does not decode (bad CRC, bad headers). */
const eventOf = (codec: EventStreamCodec, bytes: Uint8Array): SseEvent | undefined => {
  let message
  try {
    message = codec.decode(bytes)
  } catch {
    return undefined
  }
  const header = (name: string) => {
    const value = message.headers[name]?.value
    return typeof value === "string" ? value : undefined
  }
  const kind = header(":message-type")
  if (kind === "error") {
    return { event: "internalServerException", data: JSON.stringify({ message: header(":error-message") ?? header(":error-code") ?? "upstream error" }) }
  }
  return { event: kind === "exception" ? header(":exception-type") : header(":event-type"), data: decoder.decode(message.body) }
}

export const framerFor = (framing: Framing | undefined): Framer =>
  framing === "aws-eventstream" ? new EventStreamFramer() : new SseParser()
