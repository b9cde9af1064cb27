/**
 * The gateway's OTLP encoder (src/otlp/) writes byte for byte what the
 * OpenTelemetry SDK's own serializer wrote for the same spans and histogram
 * (test/fixtures/otlp-sdk-golden.json, from `@opentelemetry/otlp-transformer`).
 * decoder.test.ts pins the decoder to those bytes; this pins the encoder, so
 * an export differs from the SDK's in no field, default or order.
 */
import { Context, Exit, Option, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import golden from "../fixtures/otlp-sdk-golden.json" with { type: "json" }
import { exportRequest, requestHead, writeAttributes } from "../../src/otlp/common.ts"
import { HistogramInstrument } from "../../src/otlp/metrics.ts"
import { ProtoWriter } from "../../src/otlp/protobuf.ts"
import { ExportQueue } from "../../src/otlp/queue.ts"
import { beginSpan, endSpan, SPAN_ATTRIBUTES } from "../../src/otlp/trace.ts"
import { makeAppTracer } from "../../src/pipeline/telemetry/tracer.ts"

/** The golden's spans, each export request (one resource, one scope) written as the gateway writes it. */
const encodeGoldenSpans = (): Buffer => {
  const requests: Array<Buffer> = []
  let index = 0
  for (const { resource, scope, spanCount } of golden.traceRequests) {
    const w = new ProtoWriter(64)
    for (const span of golden.spans.slice(index, index + spanCount)) {
      const [startNs, endNs] = golden.spanTimesNs[index++]
      const start = beginSpan(w, {
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId,
        remoteParent: false,
        traceState: "",
        name: span.name,
        kind: span.kind,
        startNs: BigInt(startNs),
        endNs: BigInt(endNs)
      })
      writeAttributes(w, SPAN_ATTRIBUTES, span.attributes)
      endSpan(w, start, span.status.code, span.status.message, false)
    }
    requests.push(exportRequest(requestHead(resource, scope), w.buf.subarray(0, w.pos)))
  }
  // Two export requests one after the other are one request with both resources (a repeated field).
  return Buffer.concat(requests)
}

const encodeGoldenHistogram = (): Buffer => {
  const { resource, scope, startNs, timeNs, values } = golden.metricsRequest
  const { metric, unit, bounds, attributes } = golden.histogram
  const instrument = new HistogramInstrument({ name: metric, unit, description: "", boundaries: bounds })
  const series = instrument.newSeries(attributes)
  for (const value of values) series.add(value)
  const w = new ProtoWriter(64)
  instrument.write(w, BigInt(startNs), BigInt(timeNs))
  return exportRequest(requestHead(resource, scope), w.buf.subarray(0, w.pos))
}

type GoldenSpan = (typeof golden.eventsAndLinks.spans)[number]

/**
 * The golden's spans with events and links, as the gateway writes them: the
 * first as the GenAI recorder does (attributes only, UNSET status, a remote
 * parent), the others through the application tracer (an exception and an
 * event, links to a local and a remote span; an interrupted child).
 */
const encodeEventsAndLinks = async (): Promise<Buffer> => {
  const { resource, scope, spans } = golden.eventsAndLinks
  const sent: Array<Uint8Array> = []
  const queue = new ExportQueue({
    head: requestHead(resource, scope),
    send: (request) => (sent.push(request), Promise.resolve()),
    maxQueued: 10,
    maxQueuedBytes: 1 << 20,
    maxBatch: 10,
    maxBatchBytes: 1 << 20,
    delayMs: 60_000,
    onFailure: (error) => {
      throw error
    }
  })
  const [recorded, server, attempt] = spans
  const w = queue.open()!
  const start = beginSpan(w, { ...recorded, startNs: BigInt(recorded.startNs), endNs: BigInt(recorded.endNs) })
  writeAttributes(w, SPAN_ATTRIBUTES, recorded.attributes)
  endSpan(w, start, recorded.status.code, recorded.status.message, recorded.remoteParent)
  queue.commit()

  const tracer = makeAppTracer(queue, 1)
  const traced = (span: GoldenSpan, attributes: Record<string, unknown>, parent: Option.Option<Tracer.AnySpan>, links: Array<Tracer.SpanLink>) => {
    const native = tracer.span({
      name: span.name,
      parent,
      annotations: Context.empty(),
      links,
      startTime: BigInt(span.startNs),
      kind: (["internal", "server", "client"] as const)[span.kind - 1],
      sampled: true,
      root: false
    } as Parameters<Tracer.Tracer["span"]>[0]) as Tracer.NativeSpan
    native._traceId = span.traceId
    native._spanId = span.spanId
    for (const [key, value] of Object.entries(attributes)) native.attribute(key, value)
    return native
  }
  const [local, remote] = server.links
  const linked = new Tracer.NativeSpan({ name: "linked", parent: Option.none(), annotations: Context.empty(), links: [], startTime: 0n, kind: "internal", sampled: local.sampled })
  linked._traceId = local.traceId
  linked._spanId = local.spanId
  const caller = { ...Tracer.externalSpan({ traceId: remote.traceId, spanId: remote.spanId, sampled: remote.sampled }), traceState: remote.traceState }
  const serverSpan = traced(server, server.attributes, Option.none(), [
    { span: linked, attributes: local.attributes },
    { span: caller, attributes: remote.attributes }
  ])
  const chunk = server.events[1]
  serverSpan.event(chunk.name, BigInt(chunk.timeNs), chunk.attributes)
  // The tracer redacts an upstream failure to its class, provider and status (the exception event's text).
  serverSpan.end(BigInt(server.endNs), Exit.fail({ _tag: "UpstreamError", reason: "upstream_error", provider: "openai", upstreamStatus: 503, timedOut: false }))
  // The tracer writes `effect.fiber.interrupted` itself, for the interruption.
  const attemptAttributes = Object.fromEntries(Object.entries(attempt.attributes).filter(([key]) => key !== "effect.fiber.interrupted"))
  const attemptSpan = traced(attempt, attemptAttributes, Option.some(serverSpan), [])
  attemptSpan.end(BigInt(attempt.endNs), Exit.interrupt())
  await queue.flush()
  return Buffer.concat(sent)
}

describe("the gateway's OTLP encoding, against the OpenTelemetry SDK's", () => {
  it("spans with events, links, a remote parent and UNSET statuses are byte for byte what the SDK's serializer writes", async () => {
    expect((await encodeEventsAndLinks()).toString("hex")).toBe(golden.eventsAndLinks.hex)
  })

  it("a trace export is byte for byte what the SDK's serializer writes for the same spans", () => {
    expect(encodeGoldenSpans().toString("hex")).toBe(golden.traceHex)
  })

  it("a metrics export is byte for byte what the SDK's serializer writes for the same histogram", () => {
    expect(encodeGoldenHistogram().toString("hex")).toBe(golden.metricsHex)
  })
})
