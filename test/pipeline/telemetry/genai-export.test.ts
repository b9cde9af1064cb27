/**
 * GenAI spans and metrics as a collector receives them over OTLP gRPC: one
 * CLIENT span per model call with the conventions' attributes, the token,
 * duration and time-to-first-token histograms, the bearer metadata, and
 * exports grouped by the request's platform token.
 */
import { Redacted, Result } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import type { ChatRequest } from "../../../src/domain/index.ts"
import { CALLER_CODECS } from "../../../src/formats/index.ts"
import type { GenAiCall } from "../../../src/pipeline/telemetry/genai/call.ts"
import type { ExportCredential, TelemetrySettings } from "../../../src/pipeline/telemetry/settings.ts"
import { startOtlpReceiver } from "../../fixtures/otlp-receiver.ts"
import type { OtlpReceiver } from "../../fixtures/otlp-receiver.ts"
import { TelemetryMemory } from "../../../src/pipeline/telemetry/memory.ts"
import { asRequest, settingsOf, startTelemetry } from "./support.ts"

let collector: OtlpReceiver
beforeAll(async () => {
  collector = await startOtlpReceiver()
})
afterAll(() => collector.close())
beforeEach(() => collector.reset())

const REQUEST = { model: "gpt-4o", messages: [{ role: "system", content: "Be kind." }, { role: "user", content: "Say hello" }], temperature: 0.3, max_tokens: 64 }
const canonical = (): ChatRequest => {
  const decoded = CALLER_CODECS.openai.decodeRequest(REQUEST)
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  return decoded.success
}

const T0 = 1_000
const callOf = (overrides: Partial<GenAiCall> = {}): GenAiCall => ({
  operation: "chat",
  requestedModel: "route::smart",
  upstream: { providerId: "openai", kind: "openai", origin: "https://api.openai.test", model: "gpt-4o" },
  request: { format: "openai", json: REQUEST, canonical },
  stream: false,
  response: { id: "chatcmpl-123", model: "gpt-4o-2024-08-06", stopReason: "end_turn", usage: { inputTokens: 12, outputTokens: 5 }, text: "Hello there" },
  timing: { startedAt: T0, attemptStartedAt: T0 + 2, responseStartedAt: T0 + 40, endedAt: T0 + 250 },
  plan: "route::smart",
  variant: "b",
  attempts: 2,
  path: "fast",
  projectId: "proj-1",
  ...overrides
})

const credential = (token: string): ExportCredential => ({ token: Redacted.make(token), fingerprint: `fp-${token}` })

const genai = (extra: object = {}) =>
  settingsOf({ telemetry: { enabled: false }, genai_telemetry: { enabled: true, otlp_endpoint: collector.url, metrics_export_interval_secs: 60, ...extra } })

/** Records one model call with a telemetry of its own, flushed and shut down, and gives the span the collector received. */
const exportedSpan = async (settings: TelemetrySettings, call: GenAiCall = callOf()) => {
  const running = await startTelemetry(settings)
  await running.run(running.telemetry.recordModelCall(call))
  await running.run(running.telemetry.flush)
  await running.close()
  await collector.waitFor((c) => c.spans().length >= 1)
  return collector.spans()[0]
}

describe("GenAI span", () => {
  it("a non-streamed call: one CLIENT span named `{operation} {model}` with the conventions' attributes", async () => {
    const span = await exportedSpan(genai({ service_name: "genai-svc", environment: "qa" }))
    expect(span.name).toBe("chat gpt-4o")
    expect(span.kind).toBe(3)
    expect(span.resource).toMatchObject({ "service.name": "genai-svc", "deployment.environment.name": "qa" })
    expect(span.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.request.temperature": 0.3,
      "gen_ai.request.max_tokens": 64,
      "gen_ai.response.model": "gpt-4o-2024-08-06",
      "gen_ai.response.id": "chatcmpl-123",
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": 12,
      "gen_ai.usage.output_tokens": 5,
      "server.address": "api.openai.test",
      "server.port": 443,
      "gateway.request.model": "route::smart",
      "gateway.route": "smart",
      "gateway.variant": "b",
      "gateway.attempts": 2,
      "gateway.path": "fast",
      "gateway.project.id": "proj-1"
    })
    expect(JSON.parse(span.attributes["gen_ai.input.messages"] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: "Say hello" }] }])
    expect(JSON.parse(span.attributes["gen_ai.system_instructions"] as string)).toEqual([{ type: "text", content: "Be kind." }])
    expect(JSON.parse(span.attributes["gen_ai.output.messages"] as string)).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "Hello there" }], finish_reason: "stop" }
    ])
    expect(span.attributes["gen_ai.request.stream"]).toBeUndefined()
    expect(Number(span.endNs - span.startNs) / 1e6).toBeCloseTo(250, 0)
  })

  it("a streamed call: the same span plus the stream flag, time to first chunk and tool calls in the output", async () => {
    const span = await exportedSpan(genai(), callOf({
      stream: true,
      request: { format: "openai", json: { ...REQUEST, stream: true }, canonical },
      response: { id: "chatcmpl-9", model: "gpt-4o", stopReason: "tool_use", usage: { inputTokens: 30, outputTokens: 9 }, text: "", toolCalls: [{ id: "call_1", name: "lookup", arguments: "{\"q\":1}" }] },
      timing: { startedAt: T0, attemptStartedAt: T0 + 2, responseStartedAt: T0 + 40, firstTokenAt: T0 + 102, endedAt: T0 + 300 }
    }))
    expect(span.attributes).toMatchObject({ "gen_ai.request.stream": true, "gen_ai.response.finish_reasons": ["tool_call"], "gen_ai.response.time_to_first_chunk": 0.1 })
    expect(JSON.parse(span.attributes["gen_ai.output.messages"] as string)).toEqual([
      { role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "lookup", arguments: { q: 1 } }], finish_reason: "tool_call" }
    ])
  })

  it("a failed call has error.type and status ERROR", async () => {
    const span = await exportedSpan(genai(), callOf({ response: undefined, error: "rate_limit" }))
    expect(span.attributes["error.type"]).toBe("rate_limit")
    expect(span.status.code).toBe(2)
    expect(span.attributes["gen_ai.output.messages"]).toBeUndefined()
  })

  it("with capture_content off no prompt or completion text leaves the gateway", async () => {
    const span = await exportedSpan(genai({ capture_content: false }))
    for (const key of ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"]) expect(span.attributes[key]).toBeUndefined()
    expect(JSON.stringify(span.attributes)).not.toMatch(/Say hello|Hello there|Be kind/)
    expect(span.attributes["gen_ai.usage.output_tokens"]).toBe(5)
  })

  it("joins the trace it runs in: with no current span, the caller's span is its parent", async () => {
    const running = await startTelemetry(genai())
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    // Application tracing is off: no span of the gateway's, the caller's span is the parent.
    await running.run(running.telemetry.recordModelCall(callOf(), undefined, running.telemetry.parentOf({ traceparent: `00-${traceId}-00f067aa0ba902b7-00` })))
    await running.run(running.telemetry.flush)
    await running.close()
    await collector.waitFor((c) => c.spans().length >= 1)
    const [span] = collector.spans()
    expect(span.traceId).toBe(traceId)
    expect(span.parentSpanId).toBe("00f067aa0ba902b7")
  })

  it("carries the trace state of the trace it joins, as every span of the trace does", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const headers = { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: "vendor=abc,other=1" }
    // Untraced: the caller's span is the parent.
    const alone = await startTelemetry(genai())
    await alone.run(alone.telemetry.recordModelCall(callOf(), undefined, alone.telemetry.parentOf(headers)))
    await alone.run(alone.telemetry.flush)
    await alone.close()
    // Traced: the server span (which carries the caller's trace state) is the parent.
    const memory = new TelemetryMemory()
    const traced = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 }, genai_telemetry: { enabled: true, metrics_enabled: false } }), memory)
    await traced.run(asRequest(traced.telemetry, traced.telemetry.recordModelCall(callOf()), headers))
    await traced.close()
    await collector.waitFor((c) => c.spans().length >= 1)
    expect(collector.spans()[0].traceState).toBe("vendor=abc,other=1")
    const server = memory.appSpans().find((span) => span.kind === 2)!
    const [{ span }] = memory.genAiSpans()
    expect(span.parentSpanId).toBe(server.spanId)
    expect(server.traceState).toBe("vendor=abc,other=1")
    expect(span.traceState).toBe(server.traceState)
  })
})

describe("GenAI metrics", () => {
  it("token usage by token type, operation duration and (streams) time to first token, with the conventions' buckets", async () => {
    const running = await startTelemetry(genai())
    await running.run(running.telemetry.recordModelCall(callOf()))
    await running.run(running.telemetry.recordModelCall(callOf({
      stream: true,
      timing: { startedAt: T0, attemptStartedAt: T0 + 2, responseStartedAt: T0 + 40, firstTokenAt: T0 + 90, endedAt: T0 + 500 }
    })))
    await running.run(running.telemetry.flush)
    await running.close()
    await collector.waitFor((c) => c.points().some((point) => point.metric === "gen_ai.client.token.usage"))
    // Cumulative temporality: the last export holds the totals (the flush and the shutdown each export).
    const points = collector.calls.filter((call) => call.signal === "metrics").at(-1)!.points
    const tokens = points.filter((point) => point.metric === "gen_ai.client.token.usage")
    expect(tokens.map((point) => point.attributes["gen_ai.token.type"]).sort()).toEqual(["input", "output"])
    const input = tokens.find((point) => point.attributes["gen_ai.token.type"] === "input")!
    expect(input).toMatchObject({ type: "histogram", unit: "{token}", count: 2, sum: 24 })
    expect(input.bounds).toEqual([1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864])
    expect(input.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.response.model": "gpt-4o-2024-08-06",
      "server.address": "api.openai.test",
      "server.port": 443
    })
    // Metric series stay low-cardinality: no gateway.* attributes.
    expect(Object.keys(input.attributes).some((key) => key.startsWith("gateway."))).toBe(false)
    const duration = points.find((point) => point.metric === "gen_ai.client.operation.duration")!
    expect(duration).toMatchObject({ unit: "s", count: 2 })
    expect(duration.sum).toBeCloseTo(0.75, 5)
    const ttft = points.filter((point) => point.metric === "gen_ai.server.time_to_first_token")
    expect(ttft).toHaveLength(1)
    // From the start of the response (head at +40 ms) to the first content token (+90 ms).
    expect(ttft[0]).toMatchObject({ unit: "s", count: 1 })
    expect(ttft[0].sum).toBeCloseTo(0.05, 5)
    expect(ttft[0].bounds).toEqual([0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10])
  })

  it("metrics are exported every metrics_export_interval_secs without a flush", async () => {
    const running = await startTelemetry(genai({ metrics_export_interval_secs: 1, metrics_export_timeout_secs: 1 }))
    await running.run(running.telemetry.recordModelCall(callOf()))
    await collector.waitFor((c) => c.points().some((point) => point.metric === "gen_ai.client.operation.duration"), 4000)
    await running.close()
  })

  it("metrics_enabled = false exports spans only", async () => {
    const running = await startTelemetry(genai({ metrics_enabled: false }))
    await running.run(running.telemetry.recordModelCall(callOf()))
    await running.run(running.telemetry.flush)
    await running.close()
    await collector.waitFor((c) => c.spans().length >= 1)
    expect(collector.calls.filter((call) => call.signal === "metrics")).toEqual([])
  })
})

describe("GenAI export credentials", () => {
  it("otlp_bearer_token is sent as gRPC authorization metadata on spans and metrics", async () => {
    const running = await startTelemetry(genai({ otlp_bearer_token: "collector-secret" }))
    await running.run(running.telemetry.recordModelCall(callOf()))
    await running.run(running.telemetry.flush)
    await running.close()
    await collector.waitFor((c) => c.calls.some((call) => call.signal === "metrics") && c.calls.some((call) => call.signal === "traces"))
    for (const call of collector.calls) expect(call.metadata.authorization).toBe("Bearer collector-secret")
  })

  it("each request's platform token is its export credential: exports never mix tokens", async () => {
    const running = await startTelemetry(genai({ otlp_bearer_token: "static-token" }))
    const plan: Array<string | undefined> = ["alpha", "beta", "alpha", undefined, "beta", "alpha"]
    for (const [i, token] of plan.entries()) {
      const call = callOf({ response: { id: `resp-${i}`, model: "gpt-4o", stopReason: "end_turn", usage: { inputTokens: 1, outputTokens: 1 } } })
      await running.run(running.telemetry.recordModelCall(call, token === undefined ? undefined : credential(token)))
    }
    await running.run(running.telemetry.flush)
    await running.close()
    await collector.waitFor((c) => c.spans().length >= plan.length)
    const byToken = new Map<string, Array<string>>()
    for (const call of collector.calls) {
      for (const span of call.spans) byToken.set(call.metadata.authorization, [...(byToken.get(call.metadata.authorization) ?? []), span.attributes["gen_ai.response.id"] as string])
    }
    expect(Object.fromEntries([...byToken].map(([token, ids]) => [token, ids.sort()]))).toEqual({
      "Bearer alpha": ["resp-0", "resp-2", "resp-5"],
      "Bearer beta": ["resp-1", "resp-4"],
      "Bearer static-token": ["resp-3"]
    })
    // Metrics too: each token's export carries only its own calls.
    const durations = collector.points().filter((point) => point.metric === "gen_ai.client.operation.duration")
    expect(Object.fromEntries(durations.map((point) => [point.metadata.authorization, point.count]))).toEqual({
      "Bearer alpha": 3,
      "Bearer beta": 2,
      "Bearer static-token": 1
    })
  })

  it("a token gRPC metadata cannot carry is reported without its text, and the request is not touched", async () => {
    // grpc-js refuses metadata values outside printable ASCII, quoting the whole value in its error.
    const running = await startTelemetry(genai())
    await running.run(running.telemetry.recordModelCall(callOf(), credential("tok-visible SECRETPART\u0007")))
    await running.close()
    const failures = running.logs.filter((line) => line.msg === "telemetry export failed")
    expect(failures).toHaveLength(1)
    expect(JSON.stringify(running.logs)).not.toContain("SECRETPART")
  })

  it("an otlp_bearer_token gRPC metadata cannot carry fails the start without its text", async () => {
    const failure = await startTelemetry(genai({ otlp_bearer_token: "static SECRETPART\r" })).then(() => undefined, (error: unknown) => error)
    expect(failure).toBeDefined()
    expect(String(failure)).toMatch(/metadata/i)
    expect(`${String(failure)} ${(failure as Error).stack ?? ""} ${JSON.stringify(failure)}`).not.toContain("SECRETPART")
  })
})
