/** The application trace over OTLP gRPC: the server span and its children, the caller's trace, sampling. */
import { Effect, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TelemetryMemory } from "../../../src/pipeline/telemetry/memory.ts"
import { SPAN_KIND, STATUS_CODE } from "../../../src/otlp/trace.ts"
import { startOtlpReceiver } from "../../fixtures/otlp-receiver.ts"
import type { OtlpReceiver } from "../../fixtures/otlp-receiver.ts"
import { requestProgram, settingsOf, startTelemetry } from "./support.ts"

let collector: OtlpReceiver
beforeAll(async () => {
  collector = await startOtlpReceiver()
})
afterAll(() => collector.close())

describe("application trace", () => {
  it("exports the server span and its children with the HTTP attributes and the resource", async () => {
    collector.reset()
    const running = await startTelemetry(settingsOf({ telemetry: { otlp_endpoint: collector.url, sample_ratio: 1, service_name: "gw-test", environment: "staging" } }))
    await running.run(requestProgram(running.telemetry))
    await running.close()
    await collector.waitFor((c) => c.spans().length >= 5)
    const spans = collector.spans()
    const server = spans.find((span) => span.name === "POST /v1/chat/completions")!
    expect(server.kind).toBe(2)
    expect(server.parentSpanId).toBe("")
    expect(server.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/chat/completions",
      "url.path": "/v1/chat/completions",
      "http.response.status_code": 200
    })
    expect(server.resource).toMatchObject({ "service.name": "gw-test", "deployment.environment.name": "staging" })
    const children = spans.filter((span) => span !== server)
    expect(children.map((span) => span.name).sort()).toEqual(["gateway.cache_lookup", "gateway.guardrail_scan", "gateway.resolve_model", "gateway.upstream_attempt"])
    for (const child of children) {
      expect(child.traceId).toBe(server.traceId)
      expect(child.parentSpanId).toBe(server.spanId)
    }
    const attempt = children.find((span) => span.name === "gateway.upstream_attempt")!
    expect(attempt.kind).toBe(3)
    expect(attempt.attributes).toMatchObject({
      "gateway.attempt.number": 1,
      "gateway.provider.id": "openai",
      "gen_ai.provider.name": "openai",
      "gateway.upstream.model": "gpt-4o",
      "server.address": "api.openai.test",
      "server.port": 8443
    })
  })
})

describe("the caller's trace and sampling", () => {
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
  const callerSpan = "00f067aa0ba902b7"

  it("a sampled traceparent continues the caller's trace, even at sample_ratio 0", async () => {
    collector.reset()
    const running = await startTelemetry(settingsOf({ telemetry: { otlp_endpoint: collector.url, sample_ratio: 0 } }))
    await running.run(requestProgram(running.telemetry, { traceparent: `00-${traceId}-${callerSpan}-01`, tracestate: "vendor=abc" }))
    await running.close()
    await collector.waitFor((c) => c.spans().length >= 5)
    const server = collector.spans().find((span) => span.kind === 2)!
    expect(server.traceId).toBe(traceId)
    expect(server.parentSpanId).toBe(callerSpan)
    expect(server.traceState).toBe("vendor=abc")
    expect(new Set(collector.spans().map((span) => span.traceId))).toEqual(new Set([traceId]))
  })

  it("an unsampled traceparent is respected at sample_ratio 1: nothing is exported", async () => {
    collector.reset()
    const running = await startTelemetry(settingsOf({ telemetry: { otlp_endpoint: collector.url, sample_ratio: 1 } }))
    await running.run(requestProgram(running.telemetry, { traceparent: `00-${traceId}-${callerSpan}-00` }))
    // A sampled request after it proves the export path works, so the absence above is not a delay.
    await running.run(requestProgram(running.telemetry))
    await running.close()
    await collector.waitFor((c) => c.spans().length >= 5)
    expect(collector.spans().filter((span) => span.traceId === traceId)).toEqual([])
  })

  it("a malformed traceparent starts a new trace", async () => {
    collector.reset()
    const running = await startTelemetry(settingsOf({ telemetry: { otlp_endpoint: collector.url, sample_ratio: 1 } }))
    await running.run(requestProgram(running.telemetry, { traceparent: `00-${traceId}-zz-01` }))
    await running.close()
    await collector.waitFor((c) => c.spans().length >= 5)
    const server = collector.spans().find((span) => span.kind === 2)!
    expect(server.traceId).not.toBe(traceId)
    expect(server.parentSpanId).toBe("")
  })

  it("root requests are sampled at sample_ratio, whole traces at a time", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 0.5 } }), memory)
    for (let i = 0; i < 200; i++) await running.run(requestProgram(running.telemetry))
    const spans = memory.appSpans()
    await running.close()
    const servers = spans.filter((span) => span.kind === SPAN_KIND.server)
    // 200 draws at 0.5: outside 50..150 has a probability far below 1e-9.
    expect(servers.length).toBeGreaterThan(50)
    expect(servers.length).toBeLessThan(150)
    // Sampling is per trace: every kept trace is whole (its server span and four children).
    expect(spans.length).toBe(servers.length * 5)
  })
})

describe("a parent from outside the gateway", () => {
  it("a library user's parent span with ids no collector takes: the request starts a trace of its own", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    await running.run(Effect.withParentSpan(requestProgram(running.telemetry), Tracer.externalSpan({ traceId: "not-a-trace-id", spanId: "xyz" })))
    const spans = memory.appSpans()
    await running.close()
    const server = spans.find((span) => span.kind === SPAN_KIND.server)!
    expect(server.parentSpanId).toBe("")
    expect(server.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(spans.every((span) => span.traceId === server.traceId)).toBe(true)
  })
})

describe("with [telemetry] disabled", () => {
  it("nothing is exported and spans are no-ops", async () => {
    collector.reset()
    const running = await startTelemetry(settingsOf({ telemetry: { enabled: false, otlp_endpoint: collector.url, sample_ratio: 1 } }))
    expect(running.telemetry.tracing).toBe(false)
    const spanIds = await running.run(Effect.gen(function*() {
      const inner = yield* Effect.currentSpan.pipe(Effect.withSpan("gateway.resolve_model"))
      return inner.spanId
    }))
    expect(spanIds).toBe("noop")
    await running.run(requestProgram(running.telemetry))
    await running.close()
    // Nothing can arrive later: no provider or exporter was ever created.
    expect(collector.calls).toEqual([])
  })
})

describe("errors on the trace", () => {
  it("a 5xx response marks the server span as an error", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    await running.run(requestProgram(running.telemetry, {}, 502))
    const server = memory.appSpans().find((span) => span.kind === SPAN_KIND.server)!
    await running.close()
    expect(server.status.code).toBe(STATUS_CODE.error)
    expect(server.attributes).toMatchObject({ "http.response.status_code": 502, "error.type": "502" })
  })

  it("a 4xx response leaves the server span's status alone", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    await running.run(requestProgram(running.telemetry, {}, 404))
    const server = memory.appSpans().find((span) => span.kind === SPAN_KIND.server)!
    await running.close()
    expect(server.status.code).not.toBe(STATUS_CODE.error)
    expect(server.attributes["http.response.status_code"]).toBe(404)
  })
})
