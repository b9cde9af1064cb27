/**
 * `GET /metrics` after a scripted mix of requests sent with the official
 * OpenAI SDK: a success with usage, a failover, a cache miss then hit, a
 * guardrail refusal, an unknown model and a stream. The counters and
 * histograms are read back by value from the Prometheus text, and their
 * labels stay within configured names.
 */
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import { openAiStream } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, startGateway, waitForRequestLogs } from "./harness.ts"
import { parsePrometheus, sampleOf } from "./prometheus.ts"

let redis: OwnRedis
beforeAll(async () => {
  redis = await startOwnRedis()
})
afterAll(async () => {
  await redis.kill()
})

const { fakes, gateway } = gatewayWithFakes(
  { primary: { kind: "openai" }, backup: { kind: "openai" } },
  (fakes) => ({
    providers: {
      primary: { kind: "openai", base_url: `${fakes.primary.url}/v1`, models: ["gpt-4o"], credential: "none" },
      backup: { kind: "openai", base_url: `${fakes.backup.url}/v1`, models: ["gpt-4o-mini"], credential: "none" }
    },
    targets: { main: { model: "primary::gpt-4o" }, spare: { model: "backup::gpt-4o-mini" } },
    routes: {
      smart: { endpoint: "chat", models: ["smart"], strategy: "fallback", targets: ["main", "spare"], retry: { max_retries: 0 } },
      hedged: { endpoint: "chat", models: ["hedged"], strategy: "fallback", targets: ["main", "spare"], hedge_after_ms: 200, retry: { max_retries: 0 } },
      steady: { endpoint: "chat", models: ["steady"], strategy: "fallback", targets: ["main", "spare"], retry: { max_retries: 0 }, on_stream_break: "continue" }
    },
    security: { enabled: true, blocklist: ["zanzibar"] },
    cache: { enabled: true, url: redis.url, encrypt_salt: "metrics-salt" }
  })
)

const client = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "caller-key", maxRetries: 0 })

const completion = (model: string, usage: Record<string, unknown>) => ({
  id: "chatcmpl-metrics",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "fine" }, finish_reason: "stop" }],
  usage
})

const scrape = async (url: string) => {
  const response = await fetch(`${url}/metrics`)
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/plain")
  return parsePrometheus(await response.text())
}

describe("GET /metrics", () => {
  it("counts a scripted mix of requests by value, with bounded labels", async () => {
    const openai = client()
    const before = gateway.requestLogs().length
    // 1. A success with usage (cached and reasoning tokens too).
    fakes.primary.script({
      kind: "json",
      body: completion("gpt-4o", {
        prompt_tokens: 11,
        completion_tokens: 7,
        total_tokens: 18,
        prompt_tokens_details: { cached_tokens: 3 },
        completion_tokens_details: { reasoning_tokens: 2 }
      })
    })
    await openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello" }] })
    // 2. A failover: the first target refuses the key, the spare answers.
    fakes.primary.script({ kind: "error", status: 401 })
    fakes.backup.script({ kind: "json", body: completion("gpt-4o-mini", { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 }) })
    await openai.chat.completions.create({ model: "smart", messages: [{ role: "user", content: "fail over" }] })
    // 3. A cache miss, then a hit for the same deterministic request.
    fakes.primary.script({ kind: "json", body: completion("gpt-4o", { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 }) })
    const cached = { model: "gpt-4o", temperature: 0, messages: [{ role: "user" as const, content: "remember me" }] }
    await openai.chat.completions.create(cached)
    // The entry is written in the background: wait until a second request hits.
    const deadline = Date.now() + 3000
    let hit = false
    let hits = 0
    while (!hit && Date.now() < deadline) {
      hits++
      const again = await openai.chat.completions.create(cached).withResponse()
      hit = again.response.headers.get("x-gw-cache") === "hit"
    }
    expect(hit).toBe(true)
    // 4. A guardrail refusal.
    await expect(openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "visit zanzibar" }] })).rejects.toMatchObject({ status: 400 })
    // 5. An unknown model: counted, but its name never becomes a label.
    await expect(openai.chat.completions.create({ model: "no-such-model-x1", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ status: 404 })
    // 6. A stream.
    fakes.primary.script({ kind: "reply", text: "streamed" })
    const stream = await openai.chat.completions.create({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "stream" }] })
    for await (const _ of stream) void _
    // Every request is recorded when its response closes, with its log line.
    await waitForRequestLogs(gateway, before + 6 + hits)

    const metrics = await scrape(gateway.url)
    const requests = (labels: Record<string, string>) => sampleOf(metrics, "gateway_requests_total", labels)
    const chat = { endpoint: "/v1/chat/completions", caller_format: "openai" }
    expect(requests({ ...chat, provider: "primary", model: "gpt-4o", route: "primary::gpt-4o", status: "200", error_class: "none" })).toBe(3 + hits)
    expect(requests({ ...chat, provider: "backup", model: "smart", route: "route::smart", status: "200", error_class: "none" })).toBe(1)
    expect(requests({ ...chat, provider: "none", model: "gpt-4o", status: "400", error_class: "blocklist_match" })).toBe(1)
    expect(requests({ ...chat, provider: "none", model: "none", route: "none", status: "404", error_class: "model_not_found" })).toBe(1)
    // No label anywhere carries the unknown model's name.
    expect(JSON.stringify(metrics)).not.toContain("no-such-model-x1")

    expect(sampleOf(metrics, "gateway_tokens_total", { type: "input", provider: "primary", model: "gpt-4o" })).toBeGreaterThanOrEqual(11 + 2)
    expect(sampleOf(metrics, "gateway_tokens_total", { type: "cached", provider: "primary", model: "gpt-4o" })).toBe(3)
    expect(sampleOf(metrics, "gateway_tokens_total", { type: "reasoning", provider: "primary", model: "gpt-4o" })).toBe(2)
    expect(sampleOf(metrics, "gateway_tokens_total", { type: "input", provider: "backup", model: "smart" })).toBe(5)
    expect(sampleOf(metrics, "gateway_tokens_total", { type: "output", provider: "backup", model: "smart" })).toBe(4)

    expect(sampleOf(metrics, "gateway_failovers_total", { provider: "backup" })).toBe(1)
    expect(sampleOf(metrics, "gateway_upstream_attempts_total", { provider: "backup" })).toBe(2)
    expect(sampleOf(metrics, "gateway_retries_total", { provider: "backup" })).toBe(0)
    expect(sampleOf(metrics, "gateway_cache_requests_total", { result: "hit" })).toBe(1)
    expect(sampleOf(metrics, "gateway_cache_requests_total", { result: "miss" })).toBeGreaterThanOrEqual(1)
    expect(sampleOf(metrics, "gateway_guardrail_refusals_total", { category: "blocklist" })).toBe(1)
    expect(sampleOf(metrics, "gateway_open_streams", {})).toBe(0)
    expect(sampleOf(metrics, "gateway_dependency_up", { dependency: "cache_redis" })).toBe(1)

    // Histograms: one duration per request of the route, one first-token time for the stream.
    expect(sampleOf(metrics, "gateway_request_duration_seconds_count", { endpoint: "/v1/chat/completions", provider: "backup", model: "smart" })).toBe(1)
    expect(sampleOf(metrics, "gateway_time_to_first_token_seconds_count", { provider: "primary", model: "gpt-4o" })).toBe(1)
    const firstToken = sampleOf(metrics, "gateway_time_to_first_token_seconds_sum", { provider: "primary", model: "gpt-4o" })
    expect(firstToken).toBeGreaterThan(0)
    expect(firstToken).toBeLessThan(5)
  })

  it("counts broken streams continued on another target (on_stream_break = \"continue\"), by where and how it went", async () => {
    const openai = client()
    const before = gateway.requestLogs().length
    const scraped = async () => parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text())
    const start = await scraped()
    const delta = (now: ReturnType<typeof parsePrometheus>, labels: Record<string, string>) =>
      sampleOf(now, "gateway_continuations_total", labels) - sampleOf(start, "gateway_continuations_total", labels)
    const breaks = () => fakes.primary.script({ kind: "sse", events: openAiStream({ content: ["half "], done: false }).slice(0, -1), thenError: "close" })
    // Continued on the spare.
    breaks()
    fakes.backup.script({ kind: "sse", events: openAiStream({ content: ["and the rest"] }) })
    const whole = await openai.chat.completions.stream({ model: "steady", messages: [{ role: "user", content: "go on" }] }).finalChatCompletion()
    expect(whole.choices[0].message.content).toBe("half and the rest")
    // The spare fails too: the stream ends with the error frame.
    breaks()
    fakes.backup.script({ kind: "error", status: 503 })
    await expect(openai.chat.completions.stream({ model: "steady", messages: [{ role: "user", content: "go on" }] }).finalChatCompletion()).rejects.toThrow()
    await waitForRequestLogs(gateway, before + 2)
    const now = await scraped()
    expect(delta(now, { provider: "backup", outcome: "ok" })).toBe(1)
    expect(delta(now, { provider: "none", outcome: "failed" })).toBe(1)
  })

  it("counts retries, an upstream 429 and a caller that left before the answer (499)", async () => {
    const openai = client()
    const before = gateway.requestLogs().length
    const scraped = async () => parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text())
    const start = await scraped()
    const delta = (now: ReturnType<typeof parsePrometheus>, name: string, labels: Record<string, string>) => sampleOf(now, name, labels) - sampleOf(start, name, labels)
    // A 503, then an answer from the same target: one retry.
    fakes.primary.script({ kind: "error", status: 503 }, { kind: "json", body: completion("gpt-4o", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }) })
    await openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "retry me" }] })
    // A 429 on the route with no retries and the spare refusing too: the caller gets the 429.
    fakes.primary.script({ kind: "error", status: 429 })
    fakes.backup.script({ kind: "error", status: 429 })
    await expect(openai.chat.completions.create({ model: "smart", messages: [{ role: "user", content: "limited" }] })).rejects.toMatchObject({ status: 429 })
    // A caller that leaves while the upstream has not answered.
    fakes.primary.script({ kind: "hang" })
    const abort = new AbortController()
    const pending = fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "never mind" }] }),
      signal: abort.signal
    }).catch(() => undefined)
    const deadline = Date.now() + 3000
    while (!fakes.primary.requests.some((r) => (r.json as { messages?: Array<{ content: string }> }).messages?.[0]?.content === "never mind") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    abort.abort()
    await pending
    await waitForRequestLogs(gateway, before + 3)

    const now = await scraped()
    expect(delta(now, "gateway_retries_total", { provider: "primary" })).toBe(1)
    expect(delta(now, "gateway_upstream_attempts_total", { provider: "primary" })).toBe(2)
    expect(delta(now, "gateway_rate_limit_refusals_total", { source: "upstream" })).toBe(1)
    expect(delta(now, "gateway_requests_total", { endpoint: "/v1/chat/completions", model: "gpt-4o", status: "499" })).toBe(1)
  })

  it("counts hedges by the hedge's provider and model, won or lost", async () => {
    const openai = client()
    const before = gateway.requestLogs().length
    const start = parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text())
    const hedges = (now: ReturnType<typeof parsePrometheus>, outcome: string) =>
      sampleOf(now, "gateway_hedges_total", { provider: "backup", model: "gpt-4o-mini", outcome }) -
      sampleOf(start, "gateway_hedges_total", { provider: "backup", model: "gpt-4o-mini", outcome })
    // The first target never answers: the hedge started after 200 ms answers.
    fakes.primary.script({ kind: "hang" })
    fakes.backup.script({ kind: "json", body: completion("gpt-4o-mini", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }) })
    await openai.chat.completions.create({ model: "hedged", messages: [{ role: "user", content: "hedge won" }] })
    // The first target answers before the hedge (which waits 5 s): the hedge lost.
    fakes.primary.script({ kind: "delay", ms: 500, then: { kind: "json", body: completion("gpt-4o", { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }) } })
    fakes.backup.script({ kind: "delay", ms: 5_000 })
    await openai.chat.completions.create({ model: "hedged", messages: [{ role: "user", content: "hedge lost" }] })
    await waitForRequestLogs(gateway, before + 2)
    const now = await scrape(gateway.url)
    expect(hedges(now, "won")).toBe(1)
    expect(hedges(now, "lost")).toBe(1)
  })

  it("reports a stream while it is open, and a cache Redis that went away", async () => {
    fakes.primary.script({ kind: "slowStream", chunks: 4, intervalMs: 150 })
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "slowly" }] })
    })
    const reader = response.body!.getReader()
    await reader.read()
    expect(sampleOf(await scrape(gateway.url), "gateway_open_streams", {})).toBe(1)
    while (!(await reader.read()).done);
    await redis.kill()
    try {
      expect(sampleOf(await scrape(gateway.url), "gateway_dependency_up", { dependency: "cache_redis" })).toBe(0)
    } finally {
      await redis.restart()
    }
  })
})

describe("[metrics] settings", () => {
  it("serves /metrics on a port of its own, and not on the gateway's", async () => {
    const { closedPort } = await import("../fixtures/otlp-receiver.ts")
    const port = await closedPort()
    const own = await startGateway({ metrics: { port } })
    try {
      expect((await fetch(`${own.url}/metrics`)).status).toBe(404)
      const metrics = await scrape(`http://127.0.0.1:${port}`)
      expect(sampleOf(metrics, "gateway_open_streams", {})).toBe(0)
      expect((await fetch(`http://127.0.0.1:${port}/v1/models`)).status).toBe(404)
    } finally {
      await own.close()
    }
  })

  it("enabled = false: no /metrics", async () => {
    const off = await startGateway({ metrics: { enabled: false } })
    try {
      expect((await fetch(`${off.url}/metrics`)).status).toBe(404)
    } finally {
      await off.close()
    }
  })
})
