/**
 * Telemetry of the running gateway, exported over OTLP gRPC to receivers on
 * loopback (real gRPC servers speaking the collector's services): the
 * application trace of plain, streamed, translated, retried and failed
 * requests; the GenAI span of each model call, identical on the fast and the
 * normalized path; the token, duration and time-to-first-token metrics; the
 * bearer metadata; content capture on and off; and a collector that is down.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { closedPort, startOtlpReceiver } from "../fixtures/otlp-receiver.ts"
import type { OtlpReceiver } from "../fixtures/otlp-receiver.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const GENAI_TOKEN = "genai-collector-token-0123456789"

let openaiUp: FakeUpstream
let anthropicUp: FakeUpstream
let app: OtlpReceiver
let genai: OtlpReceiver
let gateway: RunningGateway

const providers = () => ({
  openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-4o", "text-embedding-3-small"], credential: "none" },
  anthropic: { base_url: anthropicUp.url, models: ["claude-e2e"], credential: "none" }
})

beforeAll(async () => {
  ;[openaiUp, anthropicUp, app, genai] = await Promise.all([
    startFakeUpstream({ kind: "openai" }),
    startFakeUpstream({ kind: "anthropic" }),
    startOtlpReceiver(),
    startOtlpReceiver()
  ])
  gateway = await startGateway({
    providers: providers(),
    routing: { retry: { max_retries: 2, backoff_base_ms: 10 } },
    targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-e2e" } },
    routes: { hedged: { endpoint: "chat", models: ["hedged"], strategy: "fallback", targets: ["gpt", "claude"], hedge_after_ms: 200, retry: { max_retries: 0 } } },
    telemetry: { enabled: true, otlp_endpoint: app.url, sample_ratio: 1, service_name: "gw-e2e", environment: "test" },
    genai_telemetry: {
      enabled: true,
      otlp_endpoint: genai.url,
      service_name: "gw-e2e-genai",
      metrics_export_interval_secs: 1,
      metrics_export_timeout_secs: 1,
      otlp_bearer_token: GENAI_TOKEN
    }
  })
})
afterAll(async () => {
  await gateway.close()
  await Promise.all([openaiUp.close(), anthropicUp.close(), app.close(), genai.close()])
})
beforeEach(() => {
  openaiUp.reset()
  anthropicUp.reset()
})

const openai = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0 })
const anthropic = () => new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0 })

/** The spans of one request: the server span carrying `requestId`, and every span of its trace. */
const traceOf = async (requestId: string) => {
  await app.waitFor((r) => r.spans().some((span) => span.attributes["gateway.request_id"] === requestId))
  const server = app.spans().find((span) => span.attributes["gateway.request_id"] === requestId)!
  const spans = () => app.spans().filter((span) => span.traceId === server.traceId)
  return { server, spans }
}

/** The GenAI span of the request whose trace is `traceId`. */
const genAiSpanOf = async (traceId: string) => {
  await genai.waitFor((r) => r.spans().some((span) => span.traceId === traceId))
  return genai.spans().find((span) => span.traceId === traceId)!
}

let seq = 0
const requestId = () => `tel-${process.pid}-${++seq}`

describe("application trace", () => {
  it("a plain request: the server span, model resolution and the attempt, with the resource", async () => {
    const id = requestId()
    await openai().chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello" }] }, { headers: { "x-request-id": id } })
    const { server, spans } = await traceOf(id)
    expect(server.name).toBe("POST /v1/chat/completions")
    expect(server.kind).toBe(2)
    expect(server.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/v1/chat/completions", "http.response.status_code": 200 })
    expect(server.resource).toMatchObject({ "service.name": "gw-e2e", "deployment.environment.name": "test" })
    await app.waitFor(() => spans().length >= 3)
    const names = spans().map((span) => span.name).sort()
    expect(names).toEqual(["POST /v1/chat/completions", "gateway.resolve_model", "gateway.upstream_attempt"])
    const resolve = spans().find((span) => span.name === "gateway.resolve_model")!
    expect(resolve.attributes).toMatchObject({ "gateway.request.model": "gpt-4o", "gateway.plan": "openai::gpt-4o" })
    const attempt = spans().find((span) => span.name === "gateway.upstream_attempt")!
    expect(attempt.kind).toBe(3)
    expect(attempt.parentSpanId).toBe(server.spanId)
    expect(attempt.attributes).toMatchObject({
      "gateway.attempt.number": 1,
      "gateway.provider.id": "openai",
      "gen_ai.provider.name": "openai",
      "gateway.upstream.model": "gpt-4o",
      "gateway.path": "fast",
      "server.address": "127.0.0.1"
    })
  })

  it("a retried request: one span per attempt, the failure classified, the withheld 5xx body on the attempt span only", async () => {
    const id = requestId()
    openaiUp.script({ kind: "error", status: 503, body: { error: { message: "upstream detail the caller never sees", type: "server_error" } } })
    await openai().chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "retry me" }] }, { headers: { "x-request-id": id } })
    const { spans } = await traceOf(id)
    await app.waitFor(() => spans().filter((span) => span.name === "gateway.upstream_attempt").length === 2)
    const [first, second] = spans().filter((span) => span.name === "gateway.upstream_attempt").sort((a, b) => Number(a.attributes["gateway.attempt.number"]) - Number(b.attributes["gateway.attempt.number"]))
    expect(first.attributes).toMatchObject({ "error.type": "upstream", "gateway.upstream.status_code": 503 })
    expect(String(first.attributes["gateway.upstream.error_body"])).toContain("upstream detail the caller never sees")
    expect(second.attributes["gateway.attempt.number"]).toBe(2)
    expect(Number(second.attributes["gateway.retry.delay_ms"])).toBeGreaterThanOrEqual(0)
    expect(second.attributes["error.type"]).toBeUndefined()
    const others = spans().filter((span) => span.spanId !== first.spanId)
    for (const span of others) expect(JSON.stringify(span.attributes)).not.toContain("upstream detail the caller never sees")
  })

  it("a hedged request: a span for each attempt of the race, marked primary and hedge; the GenAI record names the one that answered", async () => {
    const id = requestId()
    openaiUp.script({ kind: "hang" })
    await openai().chat.completions.create({ model: "hedged", messages: [{ role: "user", content: "hedge in the trace" }] }, { headers: { "x-request-id": id } })
    const { server, spans } = await traceOf(id)
    const attempts = () => spans().filter((span) => span.name === "gateway.upstream_attempt")
    await app.waitFor(() => attempts().length === 2)
    expect(attempts().map((span) => [span.attributes["gateway.hedge"], span.attributes["gateway.provider.id"]]).sort()).toEqual([
      ["hedge", "anthropic"],
      ["primary", "openai"]
    ])
    const record = await genAiSpanOf(server.traceId)
    expect(record.attributes).toMatchObject({ "gen_ai.provider.name": "anthropic", "gateway.attempts": 2 })
  })

  it("a failed request: the server span says the status; a 5xx is an error span", async () => {
    const id = requestId()
    openaiUp.script({ kind: "error", status: 500, times: 3 })
    await expect(openai().chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "fail" }] }, { headers: { "x-request-id": id } })).rejects.toThrow()
    const { server } = await traceOf(id)
    expect(server.attributes["http.response.status_code"]).toBe(502)
    expect(server.status.code).toBe(2)
  })

  it("continues the caller's trace from traceparent", async () => {
    const id = requestId()
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    await openai().chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "traced" }] }, {
      headers: { "x-request-id": id, traceparent: `00-${traceId}-00f067aa0ba902b7-01` }
    })
    const { server } = await traceOf(id)
    expect(server.traceId).toBe(traceId)
    expect(server.parentSpanId).toBe("00f067aa0ba902b7")
  })
})

describe("GenAI telemetry", () => {
  it("a plain request: the conventions' span, with content, exported with the bearer token", async () => {
    const id = requestId()
    const completion = await openai().chat.completions.create({ model: "gpt-4o", temperature: 0.5, max_tokens: 50, messages: [{ role: "user", content: "hello genai" }] }, { headers: { "x-request-id": id } })
    const { server } = await traceOf(id)
    const span = await genAiSpanOf(server.traceId)
    expect(span.name).toBe("chat gpt-4o")
    expect(span.kind).toBe(3)
    expect(span.metadata.authorization).toBe(`Bearer ${GENAI_TOKEN}`)
    expect(span.resource).toMatchObject({ "service.name": "gw-e2e-genai" })
    expect(span.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.request.temperature": 0.5,
      "gen_ai.request.max_tokens": 50,
      "gen_ai.response.id": completion.id,
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": completion.usage!.prompt_tokens,
      "gen_ai.usage.output_tokens": completion.usage!.completion_tokens,
      "server.address": "127.0.0.1"
    })
    expect(JSON.parse(String(span.attributes["gen_ai.input.messages"]))).toEqual([{ role: "user", parts: [{ type: "text", content: "hello genai" }] }])
    const output = JSON.parse(String(span.attributes["gen_ai.output.messages"]))
    expect(output[0]).toMatchObject({ role: "assistant", finish_reason: "stop", parts: [{ type: "text", content: completion.choices[0].message.content }] })
  })

  it("a stream: usage and the time-to-first-token metric", async () => {
    const id = requestId()
    const stream = await openai().chat.completions.create({ model: "gpt-4o", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "stream for metrics" }] }, { headers: { "x-request-id": id } })
    for await (const _ of stream) void _
    const { server } = await traceOf(id)
    const span = await genAiSpanOf(server.traceId)
    expect(Number(span.attributes["gen_ai.usage.output_tokens"])).toBeGreaterThan(0)
    expect(Number(span.attributes["gen_ai.response.time_to_first_chunk"])).toBeGreaterThanOrEqual(0)
    await genai.waitFor((r) => r.points().some((point) => point.metric === "gen_ai.server.time_to_first_token" && (point.count ?? 0) > 0))
    await genai.waitFor((r) => r.points().some((point) => point.metric === "gen_ai.client.token.usage" && point.attributes["gen_ai.token.type"] === "output"))
    await genai.waitFor((r) => r.points().some((point) => point.metric === "gen_ai.client.operation.duration"))
    const ttft = genai.points().find((point) => point.metric === "gen_ai.server.time_to_first_token")!
    expect(ttft.unit).toBe("s")
    expect(ttft.metadata.authorization).toBe(`Bearer ${GENAI_TOKEN}`)
  })

  it("the same span, attribute for attribute, on the fast path and the normalized path", async () => {
    const messages = [{ role: "user" as const, content: "same on both paths" }]
    const fastId = requestId()
    await openai().chat.completions.create({ model: "gpt-4o", max_tokens: 64, stop: ["THE END"], messages }, { headers: { "x-request-id": fastId } })
    const normalizedId = requestId()
    await anthropic().messages.create({ model: "gpt-4o", max_tokens: 64, stop_sequences: ["THE END"], messages }, { headers: { "x-request-id": normalizedId } })
    const fast = await genAiSpanOf((await traceOf(fastId)).server.traceId)
    const normalized = await genAiSpanOf((await traceOf(normalizedId)).server.traceId)
    expect(fast.attributes["gateway.path"]).toBe("fast")
    expect(normalized.attributes["gateway.path"]).toBe("normalized")
    const comparable = (attributes: Record<string, unknown>) => {
      const { "gateway.path": _path, "gen_ai.response.id": _id, ...rest } = attributes
      return rest
    }
    expect(comparable(normalized.attributes)).toEqual(comparable(fast.attributes))
    expect(fast.name).toBe(normalized.name)
  })

  it("a retried and a failed call: the attempts counted, error.type on failure", async () => {
    openaiUp.script({ kind: "error", status: 503 })
    const retriedId = requestId()
    await openai().chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "genai retry" }] }, { headers: { "x-request-id": retriedId } })
    const retried = await genAiSpanOf((await traceOf(retriedId)).server.traceId)
    expect(retried.attributes["gateway.attempts"]).toBe(2)
    expect(retried.attributes["error.type"]).toBeUndefined()

    openaiUp.script({ kind: "error", status: 400, message: "bad request upstream" })
    const failedId = requestId()
    await expect(openai().chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "genai fail" }] }, { headers: { "x-request-id": failedId } })).rejects.toThrow()
    const failed = await genAiSpanOf((await traceOf(failedId)).server.traceId)
    expect(failed.attributes["error.type"]).toBe("bad_request")
    expect(failed.status.code).toBe(2)
  })

  it("embeddings: the embeddings operation with input tokens", async () => {
    const id = requestId()
    await openai().embeddings.create({ model: "text-embedding-3-small", input: "embed me", dimensions: 8 }, { headers: { "x-request-id": id } })
    const span = await genAiSpanOf((await traceOf(id)).server.traceId)
    expect(span.name).toBe("embeddings text-embedding-3-small")
    expect(span.attributes["gen_ai.operation.name"]).toBe("embeddings")
    expect(Number(span.attributes["gen_ai.usage.input_tokens"])).toBeGreaterThan(0)
    expect(span.attributes["gen_ai.usage.output_tokens"]).toBeUndefined()
  })
})

describe("configurations", () => {
  it("capture_content = false: no messages on the span", async () => {
    const receiver = await startOtlpReceiver()
    const quiet = await startGateway({
      providers: providers(),
      telemetry: { enabled: false },
      genai_telemetry: { enabled: true, otlp_endpoint: receiver.url, capture_content: false, metrics_enabled: false }
    })
    try {
      const client = new OpenAI({ baseURL: `${quiet.url}/v1`, apiKey: "unused", maxRetries: 0 })
      await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "do not keep me" }] })
      await receiver.waitFor((r) => r.spans().length >= 1)
      const [span] = receiver.spans()
      expect(span.attributes["gen_ai.request.model"]).toBe("gpt-4o")
      expect(span.attributes["gen_ai.input.messages"]).toBeUndefined()
      expect(span.attributes["gen_ai.output.messages"]).toBeUndefined()
      expect(JSON.stringify(span.attributes)).not.toContain("do not keep me")
    } finally {
      await quiet.close()
      await receiver.close()
    }
  })

  it("GenAI telemetry alone: the span joins the caller's trace from traceparent", async () => {
    const receiver = await startOtlpReceiver()
    const genAiOnly = await startGateway({
      providers: providers(),
      telemetry: { enabled: false },
      genai_telemetry: { enabled: true, otlp_endpoint: receiver.url, metrics_enabled: false }
    })
    try {
      const traceId = "0af7651916cd43dd8448eb211c80319c"
      const client = new OpenAI({ baseURL: `${genAiOnly.url}/v1`, apiKey: "unused", maxRetries: 0 })
      await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "joined" }] }, {
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` }
      })
      await receiver.waitFor((r) => r.spans().length >= 1)
      const [span] = receiver.spans()
      expect(span.traceId).toBe(traceId)
      expect(span.parentSpanId).toBe("b7ad6b7169203331")
    } finally {
      await genAiOnly.close()
      await receiver.close()
    }
  })

  it("a collector that is down costs requests nothing, is named once at start, and export failures are logged at most once per source", async () => {
    const dead = `http://127.0.0.1:${await closedPort()}`
    const blind = await startGateway({
      providers: providers(),
      telemetry: { enabled: true, otlp_endpoint: dead, sample_ratio: 1 },
      genai_telemetry: { enabled: true, otlp_endpoint: dead, metrics_export_interval_secs: 1, metrics_export_timeout_secs: 1 }
    })
    try {
      const client = new OpenAI({ baseURL: `${blind.url}/v1`, apiKey: "unused", maxRetries: 0 })
      for (let i = 0; i < 20; i++) {
        const answer = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: `down ${i}` }] })
        expect(answer.choices[0].message.content).toContain("down")
      }
      await new Promise((resolve) => setTimeout(resolve, 2500))
      const failures = blind.logs.filter((line) => line.msg === "telemetry export failed")
      expect(failures.length).toBeGreaterThanOrEqual(1)
      const sources = failures.map((line) => line.source)
      expect(new Set(sources).size).toBe(sources.length)
      expect(blind.logs.filter((line) => line.msg === "telemetry collector unreachable")).toEqual([
        expect.objectContaining({ endpoint: dead, sends: ["traces", "genai spans", "genai metrics"] })
      ])
    } finally {
      await blind.close()
    }
  }, 20_000)
})
