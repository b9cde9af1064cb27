/**
 * The OTLP `Span` message (opentelemetry/proto/trace/v1), written as one item
 * of a scope's spans (field 2 of `ScopeSpans`) into an export queue's writer.
 *
 * The bytes are the OpenTelemetry SDK's, field for field and in its order
 * (test/otlp/sdk-bytes.test.ts): the SDK writes every dropped count (0 here:
 * the gateway drops nothing), a status for every span (UNSET too), and flags
 * on links, so this does too. They cost 6 bytes of constants per span
 * (4 more when the status is UNSET, 2 per event, 7 per link).
 */
import type { ProtoWriter } from "./protobuf.ts"

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const

/** W3C sampled flag with "is remote known" (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`); a remote parent adds `…_IS_REMOTE_MASK`. */
const FLAGS_LOCAL_PARENT = 0x101
const FLAGS_REMOTE_PARENT = 0x301
const FLAG_SAMPLED = 0x1
const FLAG_HAS_IS_REMOTE = 0x100
const FLAG_IS_REMOTE = 0x200

export interface SpanHead {
  /** "" for a new trace (random bytes are written). */
  readonly traceId: string
  /** "" for a new id (random bytes are written). */
  readonly spanId: string
  /** "" for a root. */
  readonly parentSpanId: string
  readonly remoteParent: boolean
  readonly traceState: string
  readonly name: string
  readonly kind: number
  /** Epoch nanoseconds. */
  readonly startNs: bigint
  readonly endNs: bigint
}

const SPANS_FIELD = 2
const ATTRIBUTES_FIELD = 9
const EVENTS_FIELD = 11
const LINKS_FIELD = 13

/** `dropped_attributes_count` (field 10) = 0: a varint tag and a zero. */
const TAG_DROPPED_ATTRIBUTES = (10 << 3) | 0
const TAG_DROPPED_EVENTS = (12 << 3) | 0
const TAG_DROPPED_LINKS = (14 << 3) | 0

/** One zero-valued varint field `tag` (a dropped count: the gateway drops nothing, the SDK writes the 0). */
const zero = (w: ProtoWriter, tag: number): void => {
  w.ensure(2)
  w.buf[w.pos++] = tag
  w.buf[w.pos++] = 0
}

/**
 * Opens a span item and writes its identity, name, kind and times; add
 * attributes (`SPAN_ATTRIBUTES`), then `endSpan` — or, for a span with
 * events or links, `endSpanAttributes`, events, `endSpanEvents`, links,
 * `endSpanLinks`. Returns the item's start for `endSpan` / `endSpanLinks`.
 */
export const beginSpan = (w: ProtoWriter, head: SpanHead): number => {
  const start = w.begin(SPANS_FIELD)
  if (head.traceId === "") w.randomBytesField(1, 16)
  else w.hexBytesField(1, head.traceId)
  if (head.spanId === "") w.randomBytesField(2, 8)
  else w.hexBytesField(2, head.spanId)
  if (head.traceState !== "") w.stringField(3, head.traceState)
  if (head.parentSpanId !== "") w.hexBytesField(4, head.parentSpanId)
  w.stringField(5, head.name)
  w.uintField(6, head.kind)
  w.fixed64Field(7, head.startNs)
  w.fixed64Field(8, head.endNs)
  return start
}

/** The field attributes of a span are written as (`writeAttribute(w, SPAN_ATTRIBUTES, …)`). */
export const SPAN_ATTRIBUTES = ATTRIBUTES_FIELD

/** After a span's attributes, before its events: their dropped count. */
export const endSpanAttributes = (w: ProtoWriter): void => zero(w, TAG_DROPPED_ATTRIBUTES)

/** After a span's events, before its links: their dropped count. */
export const endSpanEvents = (w: ProtoWriter): void => zero(w, TAG_DROPPED_EVENTS)

/** Opens an event of the span (attributes as field `EVENT_ATTRIBUTES`); close it with `endEvent`. */
export const beginEvent = (w: ProtoWriter, timeNs: bigint, name: string): number => {
  const event = w.begin(EVENTS_FIELD)
  w.fixed64Field(1, timeNs)
  w.stringField(2, name)
  return event
}

export const EVENT_ATTRIBUTES = 3

export const endEvent = (w: ProtoWriter, event: number): void => {
  zero(w, (4 << 3) | 0)
  w.end(event)
}

/** Opens a link to another span (attributes as field `LINK_ATTRIBUTES`); close it with `endLink`. */
export const beginLink = (w: ProtoWriter, traceId: string, spanId: string, traceState: string): number => {
  const link = w.begin(LINKS_FIELD)
  w.hexBytesField(1, traceId)
  w.hexBytesField(2, spanId)
  if (traceState !== "") w.stringField(3, traceState)
  return link
}

export const LINK_ATTRIBUTES = 4

/** Closes a link: its dropped count and flags (the linked span's sampled flag; remote when it came from outside). */
export const endLink = (w: ProtoWriter, link: number, sampled: boolean, remote: boolean): void => {
  zero(w, (5 << 3) | 0)
  w.fixed32Field(6, (sampled ? FLAG_SAMPLED : 0) | FLAG_HAS_IS_REMOTE | (remote ? FLAG_IS_REMOTE : 0))
  w.end(link)
}

/** After a span's links: their dropped count, the status and the flags; closes the span item opened at `start`. */
export const endSpanLinks = (w: ProtoWriter, start: number, code: number, message: string, remoteParent: boolean): void => {
  zero(w, TAG_DROPPED_LINKS)
  // A status on every span, UNSET too (code 0), as the SDK writes it; the message only when there is one.
  const status = w.begin(15)
  if (message !== "") w.stringField(2, message)
  w.uintField(3, code)
  w.end(status)
  w.fixed32Field(16, remoteParent ? FLAGS_REMOTE_PARENT : FLAGS_LOCAL_PARENT)
  w.end(start)
}

/** Closes a span with attributes only (no events, no links): the dropped counts, the status and the flags. */
export const endSpan = (w: ProtoWriter, start: number, code: number, message: string, remoteParent: boolean): void => {
  endSpanAttributes(w)
  endSpanEvents(w)
  endSpanLinks(w, start, code, message, remoteParent)
}
