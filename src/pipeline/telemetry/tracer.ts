/**
 * The application trace's plumbing: the Effect `Tracer` whose sampled spans
 * are encoded as OTLP the moment they end, the caller's W3C trace context as
 * a parent, the sampling decision, and what the exported spans must never
 * carry.
 *
 * Details
 * - Every `Effect.withSpan` / `Effect.fn` span of a request program is an
 *   Effect `NativeSpan`; when a sampled one ends it is written straight into
 *   the export queue (otlp/queue.ts), no span object outlives its request.
 *   Unsampled spans are plain `NativeSpan`s (same trace id, never exported).
 * - Failures are redacted before a span records them: an `UpstreamError`
 *   carries the upstream's own message (for a 5xx, text the caller never
 *   sees, docs/reference/gateway-spec.md §7.3.6), and every span the failure
 *   passes through would otherwise copy it into an exception event. The
 *   attempt span records the withheld body explicitly (spans.ts); no other
 *   span does.
 * - As the OpenTelemetry bridge did: a span whose program succeeded has
 *   status OK; a failure adds one `exception` event per error and status
 *   ERROR with the first error's message; an interruption alone sets
 *   `effect.fiber.interrupted`. A span with `error.type` (a server span whose
 *   response is a 5xx, an attempt whose stream broke after its head) gets
 *   status ERROR (as the semantic conventions have it), although its program
 *   succeeded (it wrote the error, or forwarded what the upstream sent).
 */
import { Cause, Exit, Option, References, Tracer } from "effect"
import type { Context } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { nowNanos } from "./clock.ts"
import { drawn } from "./sampling.ts"
import { writeAttribute } from "../../otlp/common.ts"
import type { ProtoWriter } from "../../otlp/protobuf.ts"
import type { ExportQueue } from "../../otlp/queue.ts"
import { beginEvent, beginLink, beginSpan, endEvent, endLink, endSpanAttributes, endSpanEvents, endSpanLinks, EVENT_ATTRIBUTES, LINK_ATTRIBUTES, SPAN_ATTRIBUTES, SPAN_KIND, STATUS_CODE } from "../../otlp/trace.ts"
import { ATTR } from "./names.ts"

/** An upstream failure as spans may show it: the class, the provider, the status; never the upstream's text. */
class RedactedUpstreamFailure extends Error {
  constructor(error: { readonly reason: string; readonly provider: string; readonly upstreamStatus: number; readonly timedOut: boolean }) {
    const what = error.timedOut ? "timed out" : error.upstreamStatus === 0 ? "was unreachable" : `returned status ${error.upstreamStatus}`
    super(`${error.reason}: provider ${error.provider} ${what}`)
    this.name = "UpstreamError"
    this.stack = `${this.name}: ${this.message}`
  }
}

const isUpstreamError = (error: unknown): error is ConstructorParameters<typeof RedactedUpstreamFailure>[0] =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "UpstreamError"

const redact = (cause: Cause.Cause<unknown>): Cause.Cause<unknown> =>
  Cause.map(cause, (error) => (isUpstreamError(error) ? new RedactedUpstreamFailure(error) : error))

/** The caller's span, with the W3C `tracestate` it came with. */
interface CallerSpan extends Tracer.ExternalSpan {
  readonly traceState: string
}

/** The `tracestate` a span carries: its caller's, inherited by every descendant (the GenAI span too). */
export const traceStateOf = (span: Tracer.AnySpan): string =>
  span instanceof ExportedSpan ? span.traceState : (span as Partial<CallerSpan>).traceState ?? ""

const EXCEPTION_EVENT = "exception"

/** One span, as it ends: identity, attributes, events, links, status (OTLP `Span`). */
const writeSpan = (w: ProtoWriter, span: ExportedSpan, endNs: bigint, exit: Exit.Exit<unknown, unknown>): void => {
  const parent = Option.getOrUndefined(span.parent)
  const remoteParent = parent?._tag === "ExternalSpan"
  const start = beginSpan(w, {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: parent?.spanId ?? "",
    remoteParent,
    traceState: span.traceState,
    name: span.name,
    kind: SPAN_KIND[span.kind],
    startNs: span.startNs,
    endNs
  })
  const pairs = span.pairs
  for (let i = 0; i < pairs.length; i += 2) {
    // An attribute set to undefined is an attribute not set.
    if (pairs[i + 1] !== undefined) writeAttribute(w, SPAN_ATTRIBUTES, pairs[i] as string, pairs[i + 1])
  }
  let code: number = STATUS_CODE.ok
  let message = ""
  const interrupted = Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
  if (interrupted) {
    code = STATUS_CODE.unset
    writeAttribute(w, SPAN_ATTRIBUTES, "effect.fiber.interrupted", true)
  }
  endSpanAttributes(w)
  if (Exit.isFailure(exit) && !interrupted) {
    const errors = Cause.prettyErrors(redact(exit.cause))
    for (const error of errors) {
      const event = beginEvent(w, endNs, EXCEPTION_EVENT)
      writeAttribute(w, EVENT_ATTRIBUTES, "exception.type", error.name)
      writeAttribute(w, EVENT_ATTRIBUTES, "exception.message", error.message)
      writeAttribute(w, EVENT_ATTRIBUTES, "exception.stacktrace", error.stack ?? "")
      endEvent(w, event)
    }
    if (errors.length > 0) {
      code = STATUS_CODE.error
      message = errors[0].message
    }
  }
  // A span that names what failed (`error.type`: a 5xx server span, an attempt whose stream broke after
  // its head) is an error span, though its program succeeded (it wrote the error, or forwarded what came).
  if (code === STATUS_CODE.ok && span.attributeValue(ATTR.errorType) !== undefined) code = STATUS_CODE.error
  const events = span._events
  if (events !== undefined) {
    for (const [name, time, eventAttributes] of events) {
      const event = beginEvent(w, time, name)
      for (const key in eventAttributes) writeAttribute(w, EVENT_ATTRIBUTES, key, eventAttributes[key])
      endEvent(w, event)
    }
  }
  endSpanEvents(w)
  for (const link of span.links) {
    const entry = beginLink(w, link.span.traceId, link.span.spanId, traceStateOf(link.span))
    for (const key in link.attributes) writeAttribute(w, LINK_ATTRIBUTES, key, link.attributes[key])
    endLink(w, entry, link.span.sampled, link.span._tag === "ExternalSpan")
  }
  endSpanLinks(w, start, code, message, remoteParent)
}

type SpanOptions = ConstructorParameters<typeof Tracer.NativeSpan>[0]

/**
 * What the request context sets so that Effect takes no time reading for a
 * span: the spans that are exported take their own (`nowNanos`: one
 * conversion, where Effect's clock anchors a `process.hrtime.bigint()` reading
 * on the wall clock in BigInt arithmetic at every span's start and end), the
 * others need none.
 */
export const TIMING_OFF = [References.TracerTimingEnabled, false] as const

/** A sampled span of the application trace: written into the export queue when it ends. */
class ExportedSpan extends Tracer.NativeSpan {
  readonly traceState: string
  private readonly queue: ExportQueue
  /** Attributes as keys and values in turn (a span has a handful: cheaper than a Map per span). */
  readonly pairs: Array<unknown> = []
  /** When the span started, epoch nanoseconds (`nowNanos`: the request context turns Effect's own span timing off). */
  readonly startNs: bigint

  constructor(options: SpanOptions, queue: ExportQueue) {
    super(options)
    this.queue = queue
    this.startNs = options.startTime === 0n ? nowNanos() : options.startTime
    const parent = Option.getOrUndefined(options.parent)
    this.traceState = parent === undefined ? "" : traceStateOf(parent)
  }

  override attribute(key: string, value: unknown): void {
    if (this.status._tag === "Ended") return
    const at = this.indexOf(key)
    if (at === -1) this.pairs.push(key, value)
    else this.pairs[at + 1] = value
  }

  /** The attributes as a Map, for whoever reads them so (the exporter reads `pairs`). */
  override get attributes(): Map<string, unknown> {
    const map = new Map<string, unknown>()
    for (let i = 0; i < this.pairs.length; i += 2) map.set(this.pairs[i] as string, this.pairs[i + 1])
    return map
  }

  /** An attribute's value, or undefined. */
  attributeValue(key: string): unknown {
    const at = this.indexOf(key)
    return at === -1 ? undefined : this.pairs[at + 1]
  }

  /** Where `key` sits in `pairs`, or -1. */
  private indexOf(key: string): number {
    const pairs = this.pairs
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === key) return i
    return -1
  }

  override end(effectEndTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    const endTime = effectEndTime === 0n ? nowNanos() : effectEndTime
    super.end(endTime, exit)
    const w = this.queue.open()
    if (w === undefined) return
    try {
      writeSpan(w, this, endTime, exit)
      this.queue.commit()
    } catch (error) {
      // Never into the request: the half-written span is cut off by the next `open()`.
      this.queue.report(error)
    }
  }
}

/** A sampled span of the application trace (one its tracer exports as it ends). */
export const isExportedSpan = (span: Tracer.AnySpan): boolean => span instanceof ExportedSpan

/**
 * The Effect tracer of the application trace, exporting into `queue`.
 * Children follow their parent's decision (Effect passes it as `sampled`);
 * roots that are server spans were drawn by `sampleRequest` already; any
 * other root (work outside a request) is drawn at `ratio`.
 */
export const makeAppTracer = (queue: ExportQueue, ratio: number): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      if (options.parent._tag === "Some") {
        const parent = options.parent.value
        // A parent from outside (a library user's) whose ids no collector takes: the span starts a trace of its own.
        if (parent._tag === "ExternalSpan" && !hasValidIds(parent)) return this.span({ ...options, parent: Option.none() })
        return options.sampled ? new ExportedSpan(options, queue) : new Tracer.NativeSpan(options)
      }
      const sampled = options.kind === "server" ? options.sampled : options.sampled && drawn(ratio)
      return sampled ? new ExportedSpan(options, queue) : new Tracer.NativeSpan(sampled === options.sampled ? options : { ...options, sampled })
    }
  })

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/

/** Ids a collector accepts: 32 and 16 lower-case hex digits (an all-zero id is refused where the caller's header is read). */
export const hasValidIds = (span: Tracer.AnySpan): boolean => TRACE_ID.test(span.traceId) && SPAN_ID.test(span.spanId)

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const ZERO_TRACE = "0".repeat(32)
const ZERO_SPAN = "0".repeat(16)
/** A `tracestate` list member (W3C Trace Context, level 1). */
const TRACESTATE_MEMBER = /^(?:[a-z0-9][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/
const MAX_TRACESTATE_MEMBERS = 32

const first = (header: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof header === "string" ? header : header?.join(",")

/** The valid members of a `tracestate` header (at most 32), or "" when none is. */
const traceStateFrom = (header: string | undefined): string => {
  if (header === undefined || header.length > 8192) return ""
  const members: Array<string> = []
  for (const part of header.split(",")) {
    const member = part.trim()
    if (member !== "" && TRACESTATE_MEMBER.test(member)) members.push(member)
    if (members.length === MAX_TRACESTATE_MEMBERS) break
  }
  return members.join(",")
}

/**
 * The caller's trace (W3C `traceparent` and `tracestate`) as the parent of the
 * request's server span: the trace continues, and the parent's sampled flag
 * decides sampling. Undefined when the header is absent or malformed.
 */
export const parentFromHeaders = (headers: IncomingHttpHeaders): Tracer.ExternalSpan | undefined => {
  const header = headers.traceparent
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined) return undefined
  const match = TRACEPARENT.exec(value.trim())
  if (match === null) return undefined
  const [, version, traceId, spanId, flags, rest] = match
  // Version ff is invalid; version 00 has exactly four fields (later versions may add more).
  if (version === "ff" || (version === "00" && rest !== undefined) || traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined
  const span: CallerSpan = {
    _tag: "ExternalSpan",
    traceId,
    spanId,
    sampled: (parseInt(flags, 16) & 1) === 1,
    annotations: EMPTY_ANNOTATIONS,
    traceState: traceStateFrom(first(headers.tracestate))
  }
  return span
}

const EMPTY_ANNOTATIONS: Context.Context<never> = Tracer.externalSpan({ traceId: ZERO_TRACE, spanId: ZERO_SPAN }).annotations

