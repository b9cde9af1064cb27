/** The application trace over OTLP gRPC: the server span and its children, the caller's trace, sampling. */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
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
