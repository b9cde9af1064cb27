/**
 * The OTLP decoder the telemetry tests read exports with
 * (src/otlp/decode.ts) reads what the OpenTelemetry SDK's own
 * serializer writes: bytes captured from `@opentelemetry/otlp-transformer`
 * (test/fixtures/otlp-sdk-golden.json) decode to the spans and the histogram
 * point they were made from. So a test that decodes the gateway's exports
 * checks them against the official encoding, not against itself.
 */
import { describe, expect, it } from "vitest"
import golden from "../fixtures/otlp-sdk-golden.json" with { type: "json" }
import { decodeMetricsRequest, decodeTraceRequest } from "../../src/otlp/decode.ts"

describe("the OTLP test decoder", () => {
  it("reads the SDK's trace export: ids, parents, kinds, attributes of every type, status", () => {
    const spans = decodeTraceRequest(Buffer.from(golden.traceHex, "hex"))
    expect(spans.map(({ name, kind, traceId, spanId, parentSpanId, attributes, status }) => ({ name, kind, traceId, spanId, parentSpanId, attributes, status }))).toEqual(golden.spans)
    expect(spans[0].resource["service.name"]).toBe("gateway")
    expect(spans.every((span) => span.endNs >= span.startNs && span.startNs > 0n)).toBe(true)
  })

  it("reads the SDK's metrics export: a cumulative histogram point with its buckets", () => {
    const [point, ...rest] = decodeMetricsRequest(Buffer.from(golden.metricsHex, "hex"))
    expect(rest).toEqual([])
    const { resource: _resource, ...fields } = point
    expect(fields).toEqual(golden.histogram)
  })

  it("refuses an export whose lengths run past its end, as a collector does (an encoder's wrong length cannot pass unseen)", () => {
    const traces = Buffer.from(golden.traceHex, "hex")
    const metrics = Buffer.from(golden.metricsHex, "hex")
    for (const cut of [1, 3, 10]) {
      expect(() => decodeTraceRequest(traces.subarray(0, traces.length - cut))).toThrow(/truncated/)
      expect(() => decodeMetricsRequest(metrics.subarray(0, metrics.length - cut))).toThrow(/truncated/)
    }
  })
})
