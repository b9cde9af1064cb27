/**
 * The OTLP `Span` message (opentelemetry/proto/trace/v1), written as one item
 * of a scope's spans (field 2 of `ScopeSpans`) into an export queue's writer.
 */
import type { ProtoWriter } from "./protobuf.ts"

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const

/** W3C sampled flag with "is remote known" (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`); a remote parent adds `…_IS_REMOTE_MASK`. */
const FLAGS_LOCAL_PARENT = 0x101
const FLAGS_REMOTE_PARENT = 0x301

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
export const EVENTS_FIELD = 11
export const LINKS_FIELD = 13

/**
 * Opens a span item and writes its identity, name, kind and times; add
 * attributes (`SPAN_ATTRIBUTES`), events and links, then `endSpan`.
 * Returns the item's start for `endSpan`.
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

/** Writes the status (code, and message for errors) and the flags, and closes the span item opened at `start`. */
export const endSpan = (w: ProtoWriter, start: number, code: number, message: string, remoteParent: boolean): void => {
  if (code !== STATUS_CODE.unset) {
    const status = w.begin(15)
    if (message !== "") w.stringField(2, message)
    w.uintField(3, code)
    w.end(status)
  }
  w.fixed32Field(16, remoteParent ? FLAGS_REMOTE_PARENT : FLAGS_LOCAL_PARENT)
  w.end(start)
}
