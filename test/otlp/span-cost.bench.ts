/**
 * What a span costs to encode: time per span (vitest bench) and bytes per
 * span, printed, for the golden's six spans written as the GenAI recorder
 * writes spans. Not part of the test run (no `.test.ts`); run it with
 * `npx vitest bench --run test/otlp/span-cost.bench.ts`, before and after an
 * encoder change, on a quiet machine (the median of 15 rounds; under load,
 * instruction counts under callgrind as bench/README.md describes are steadier).
 */
import { it } from "vitest"
import golden from "../fixtures/otlp-sdk-golden.json" with { type: "json" }
import { writeAttributes } from "../../src/otlp/common.ts"
import { ProtoWriter } from "../../src/otlp/protobuf.ts"
import { beginSpan, endSpan, SPAN_ATTRIBUTES } from "../../src/otlp/trace.ts"

const spans = golden.spans.map((span, i) => ({
  head: {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    remoteParent: false,
    traceState: "",
    name: span.name,
    kind: span.kind,
    startNs: BigInt(golden.spanTimesNs[i][0]),
    endNs: BigInt(golden.spanTimesNs[i][1])
  },
  attributes: span.attributes,
  status: span.status
}))

const w = new ProtoWriter(64 * 1024)
const writeAll = () => {
  w.reset()
  for (const span of spans) {
    const start = beginSpan(w, span.head)
    writeAttributes(w, SPAN_ATTRIBUTES, span.attributes)
    endSpan(w, start, span.status.code, span.status.message, false)
  }
}
writeAll()
console.log(`${spans.length} spans, ${w.pos} bytes, ${(w.pos / spans.length).toFixed(1)} bytes per span`)

it("prints the time per span", () => {
  const rounds: Array<number> = []
  for (let round = 0; round < 15; round++) {
    const started = performance.now()
    for (let i = 0; i < 20_000; i++) writeAll()
    rounds.push(((performance.now() - started) * 1e6) / (20_000 * spans.length))
  }
  rounds.sort((a, b) => a - b)
  console.log(`${rounds[7].toFixed(1)} ns per span (median of ${rounds.length} rounds)`)
})
