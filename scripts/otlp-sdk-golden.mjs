/**
 * Writes the OpenTelemetry SDK's bytes into test/fixtures/otlp-sdk-golden.json:
 * each export described there (spans, histogram, resources, scopes, times) is
 * serialized by the SDK's own serializers (ProtobufTraceSerializer,
 * ProtobufMetricsSerializer) and its hex stored beside the description.
 * test/otlp/sdk-bytes.test.ts checks that src/otlp writes the same bytes.
 *
 * The SDK is not a dependency of the gateway; install it apart and point at it:
 *   mkdir /tmp/otel && cd /tmp/otel && npm init -y && npm install \
 *     @opentelemetry/otlp-transformer@0.223.0 @opentelemetry/api@1
 *   OTEL_SDK_DIR=/tmp/otel node scripts/otlp-sdk-golden.mjs [--check]
 * With --check it only says whether the stored hex is what the SDK writes.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"

const sdkDir = process.env.OTEL_SDK_DIR
if (sdkDir === undefined) throw new Error("set OTEL_SDK_DIR to a directory where @opentelemetry/otlp-transformer is installed")
const require = createRequire(join(sdkDir, "package.json"))
const { ProtobufTraceSerializer, ProtobufMetricsSerializer } = require("@opentelemetry/otlp-transformer")
const { AggregationTemporality, DataPointType } = require("@opentelemetry/sdk-metrics")

const path = new URL("../test/fixtures/otlp-sdk-golden.json", import.meta.url)
const golden = JSON.parse(readFileSync(path, "utf8"))

/** Epoch nanoseconds (a decimal string) as the SDK's HrTime. */
const hrTime = (ns) => [Number(BigInt(ns) / 1_000_000_000n), Number(BigInt(ns) % 1_000_000_000n)]
const traceState = (text) => (text ? { serialize: () => text } : undefined)

/** A span as the SDK's `ReadableSpan` (what its serializer reads), from the fixture's description. */
const readableSpan = (span, times, resource, scope) => ({
  spanContext: () => ({ traceId: span.traceId, spanId: span.spanId, traceFlags: 1, traceState: traceState(span.traceState) }),
  parentSpanContext: span.parentSpanId ? { traceId: span.traceId, spanId: span.parentSpanId, traceFlags: 1, isRemote: span.remoteParent === true } : undefined,
  name: span.name,
  // The API's kinds count from 0 (INTERNAL); OTLP's from 1.
  kind: span.kind - 1,
  startTime: hrTime(times[0]),
  endTime: hrTime(times[1]),
  attributes: span.attributes,
  droppedAttributesCount: 0,
  events: (span.events ?? []).map((event) => ({ name: event.name, time: hrTime(event.timeNs), attributes: event.attributes, droppedAttributesCount: 0 })),
  droppedEventsCount: 0,
  links: (span.links ?? []).map((link) => ({
    context: { traceId: link.traceId, spanId: link.spanId, traceFlags: link.sampled ? 1 : 0, isRemote: link.remote, traceState: traceState(link.traceState) },
    attributes: link.attributes,
    droppedAttributesCount: 0
  })),
  droppedLinksCount: 0,
  status: span.status,
  resource,
  instrumentationScope: scope
})

/** Export requests one after the other: one request with all their resources (the SDK groups by resource). */
const traceHexOf = (requests, spans, times) => {
  const readable = []
  let index = 0
  for (const request of requests) {
    const resource = { attributes: request.resource }
    const scope = { name: request.scope }
    for (let i = 0; i < request.spanCount; i++, index++) readable.push(readableSpan(spans[index], times[index], resource, scope))
  }
  return Buffer.from(ProtobufTraceSerializer.serializeRequest(readable)).toString("hex")
}

const metricsHexOf = (request, histogram) => {
  const values = request.values
  const counts = new Array(histogram.bounds.length + 1).fill(0)
  for (const value of values) {
    let bucket = 0
    while (bucket < histogram.bounds.length && value > histogram.bounds[bucket]) bucket++
    counts[bucket]++
  }
  const resourceMetrics = {
    resource: { attributes: request.resource },
    scopeMetrics: [
      {
        scope: { name: request.scope },
        metrics: [
          {
            descriptor: { name: histogram.metric, description: "", unit: histogram.unit, valueType: 1 },
            aggregationTemporality: AggregationTemporality.CUMULATIVE,
            dataPointType: DataPointType.HISTOGRAM,
            dataPoints: [
              {
                startTime: hrTime(request.startNs),
                endTime: hrTime(request.timeNs),
                attributes: histogram.attributes,
                value: {
                  count: values.length,
                  sum: values.reduce((a, b) => a + b, 0),
                  min: Math.min(...values),
                  max: Math.max(...values),
                  buckets: { boundaries: histogram.bounds, counts }
                }
              }
            ]
          }
        ]
      }
    ]
  }
  return Buffer.from(ProtobufMetricsSerializer.serializeRequest(resourceMetrics)).toString("hex")
}

const written = {
  traceHex: traceHexOf(golden.traceRequests, golden.spans, golden.spanTimesNs),
  metricsHex: metricsHexOf(golden.metricsRequest, golden.histogram),
  eventsAndLinksHex: traceHexOf(
    [{ resource: golden.eventsAndLinks.resource, scope: golden.eventsAndLinks.scope, spanCount: golden.eventsAndLinks.spans.length }],
    golden.eventsAndLinks.spans,
    golden.eventsAndLinks.spans.map((span) => [span.startNs, span.endNs])
  )
}

const stale = [
  ["traceHex", golden.traceHex, written.traceHex],
  ["metricsHex", golden.metricsHex, written.metricsHex],
  ["eventsAndLinks.hex", golden.eventsAndLinks.hex, written.eventsAndLinksHex]
].filter(([, stored, fresh]) => stored !== fresh)
if (process.argv.includes("--check")) {
  for (const [name] of stale) console.log(`${name}: not what the SDK writes`)
  process.exitCode = stale.length === 0 ? 0 : 1
} else {
  golden.traceHex = written.traceHex
  golden.metricsHex = written.metricsHex
  golden.eventsAndLinks.hex = written.eventsAndLinksHex
  writeFileSync(path, JSON.stringify(golden, null, 1))
  console.log(stale.length === 0 ? "unchanged" : `rewrote ${stale.map(([name]) => name).join(", ")}`)
}
