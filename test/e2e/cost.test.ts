/**
 * Cost accounting and budgets, against hand-computed prices: a request's
 * usage priced at its model's price (`[models]` over the shipped table), cache
 * reads and writes at their own rates, reasoning as output, streams included,
 * every attempt of a retry included; shown as `x-gw-cost-usd` when the head
 * is still to be written, in the log line (`cost_usd`) and on the GenAI span.
 * A key's daily budget, once spent, refuses the next request with 429 `quota`
 * before any upstream call. The other endpoints whose answers report token
 * usage (embeddings, images) are priced and settled against budgets alike.
 */
import Anthropic from "@anthropic-ai/sdk"
import { Redis } from "ioredis"
import OpenAI from "openai"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicStartMessage, anthropicStream, anthropicStreamError, startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startOtlpReceiver } from "../fixtures/otlp-receiver.ts"
import type { OtlpReceiver } from "../fixtures/otlp-receiver.ts"
import { REDIS_URL } from "../tenancy/support.ts"
import { startGateway, waitForRequestLogs } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const RUN = randomUUID().slice(0, 8)
const METER_KEY = `gwk-meter-${RUN}-41d9`
const BUDGET_KEY = `gwk-budget-${RUN}-77ac`
const EMBED_KEY = `gwk-embed-${RUN}-5e0b`

/** The fakes, the GenAI collector, the gateway and a Redis client to read the budget counters. */
let openaiUp: FakeUpstream, anthropicUp: FakeUpstream, genai: OtlpReceiver, gateway: RunningGateway, redis: Redis

beforeAll(async () => {
  ;[openaiUp, anthropicUp, genai] = await Promise.all([startFakeUpstream({ kind: "openai" }), startFakeUpstream({ kind: "anthropic" }), startOtlpReceiver()])
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  gateway = await startGateway({
    providers: {
      openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-5", "house-model", "house-embed", "house-image"], credential: "none" },
      anthropic: { base_url: anthropicUp.url, models: ["claude-sonnet-4-5"], credential: "none" }
    },
    models: {
      "house-model": { input_per_mtok: 4, output_per_mtok: 16, cache_read_per_mtok: 1 },
      "house-embed": { input_per_mtok: 0.13, output_per_mtok: 0 },
      "house-image": { input_per_mtok: 5, output_per_mtok: 40 }
    },
    routing: { retry: { max_retries: 2, backoff_base_ms: 10 } },
    telemetry: { enabled: false },
    genai_telemetry: { enabled: true, otlp_endpoint: genai.url, metrics_enabled: false, capture_content: false },
    limits: { url: REDIS_URL },
    keys: {
      [`meter-${RUN}`]: { key: "env::METER_KEY" },
      [`budget-${RUN}`]: { key: "env::BUDGET_KEY", budget_usd_per_day: 0.005 },
      [`embed-${RUN}`]: { key: "env::EMBED_KEY", budget_usd_per_day: 0.001 }
    }
  }, { METER_KEY, BUDGET_KEY, EMBED_KEY })
})
afterAll(async () => {
  await gateway.close()
  const keys = await redis.keys(`gw:limits:{key:*-${RUN}}:*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
  await Promise.all([openaiUp.close(), anthropicUp.close(), genai.close()])
})
beforeEach(() => {
  openaiUp.reset()
  anthropicUp.reset()
})

const openai = (key = METER_KEY) => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-caller", maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${key}` } })

/** An OpenAI answer whose usage has cached input and reasoning output. */
const answerWithUsage = (id: string, model: string) => ({
  kind: "json" as const,
  body: {
    id,
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "priced", refusal: null }, finish_reason: "stop", logprobs: null }],
    usage: {
      prompt_tokens: 1000,
      completion_tokens: 500,
      total_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 400 },
      completion_tokens_details: { reasoning_tokens: 200 }
    }
  }
})

const lastRequestLine = async (count: number) => (await waitForRequestLogs(gateway, count)).at(-1)!

describe("the cost of a request", () => {
  it("cached input and reasoning output at the shipped price: x-gw-cost-usd, the log line and the GenAI span agree with the hand-computed figure", async () => {
    openaiUp.script(answerWithUsage("chatcmpl-cost-shipped", "gpt-5"))
    const lines = gateway.requestLogs().length
    const { data, response } = await openai().chat.completions.create({ model: "gpt-5", messages: [{ role: "user", content: "price me" }] }).withResponse()
    expect(data.usage?.completion_tokens_details?.reasoning_tokens).toBe(200)
    // gpt-5: 600 plain input × $1.25 + 400 cached × $0.125 + 500 output (200 of them reasoning) × $10, per million.
    const expected = (600 * 1.25 + 400 * 0.125 + 500 * 10) / 1e6
    expect(expected).toBeCloseTo(0.0058, 10)
    expect(Number(response.headers.get("x-gw-cost-usd"))).toBeCloseTo(expected, 10)
    expect((await lastRequestLine(lines + 1)).cost_usd).toBeCloseTo(expected, 10)
    // The first gpt-5 answer of this gateway: /metrics has spent exactly its price on it.
    const spent = /^gateway_cost_usd_total\{provider="openai",model="gpt-5"\} (\S+)$/m.exec(await (await fetch(`${gateway.url}/metrics`)).text())
    expect(Number(spent?.[1])).toBeCloseTo(expected, 10)
    await genai.waitFor((receiver) => receiver.spans().some((span) => span.attributes["gen_ai.response.id"] === "chatcmpl-cost-shipped"))
    const span = genai.spans().find((candidate) => candidate.attributes["gen_ai.response.id"] === "chatcmpl-cost-shipped")!
    expect(span.attributes["gateway.cost_usd"]).toBeCloseTo(expected, 10)
    // The gateway key is in no span (nor the caller's provider key).
    expect(JSON.stringify(genai.spans(), (_, value: unknown) => (typeof value === "bigint" ? String(value) : value))).not.toContain(METER_KEY)
    expect(JSON.stringify(gateway.logs)).not.toContain(METER_KEY)
  })

  it("a model priced in [models] uses its own prices (cache reads at their rate)", async () => {
    openaiUp.script(answerWithUsage("chatcmpl-cost-house", "house-model"))
    const { response } = await openai().chat.completions.create({ model: "house-model", messages: [{ role: "user", content: "price me" }] }).withResponse()
    expect(Number(response.headers.get("x-gw-cost-usd"))).toBeCloseTo((600 * 4 + 400 * 1 + 500 * 16) / 1e6, 10)
  })

  it("a stream, and every attempt of a retry: an attempt that failed after reporting its input is paid for too; no header after the head", async () => {
    // First attempt: the input is reported (message_start), then the upstream is overloaded before any content: retried.
    anthropicUp.script(
      { kind: "sse", events: [anthropicEvent("message_start", { message: anthropicStartMessage({ blocks: [], usage: { input_tokens: 1000, output_tokens: 1 } }) }), anthropicStreamError()] },
      {
        kind: "sse",
        events: anthropicStream({
          blocks: [{ type: "text", pieces: ["a ", "streamed ", "answer"] }],
          usage: { input_tokens: 100, output_tokens: 300, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 }
        })
      }
    )
    const lines = gateway.requestLogs().length
    const client = new Anthropic({ baseURL: gateway.url, apiKey: "sk-caller", maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${METER_KEY}` } })
    const stream = client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 400, messages: [{ role: "user", content: "stream me" }] })
    const message = await stream.finalMessage()
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "a streamed answer" })])
    expect(anthropicUp.requests).toHaveLength(2)
    // claude-sonnet-4-5: attempt 1 = 1000 input × $3 + 1 output × $15;
    // attempt 2 = 100 plain input × $3 + 1000 cache reads × $0.30 + 200 cache writes × $3.75 + 300 output × $15.
    const first = (1000 * 3 + 1 * 15) / 1e6
    const second = (100 * 3 + 1000 * 0.3 + 200 * 3.75 + 300 * 15) / 1e6
    const line = await lastRequestLine(lines + 1)
    expect(line.attempts).toBe(2)
    expect(line.cost_usd).toBeCloseTo(first + second, 10)
    expect((await stream.withResponse()).response.headers.get("x-gw-cost-usd")).toBeNull()
  })
})

describe("a daily budget", () => {
  it("once spent, the next request is refused 429 quota before any upstream call, parsed by both SDKs, not retried", async () => {
    const day = new Date().toISOString().slice(0, 10)
    const spent = `gw:limits:{key:budget-${RUN}}:usd:${day}`
    openaiUp.script(answerWithUsage("chatcmpl-budget", "gpt-5"))
    // Admitted: its estimate (max_tokens 400 at $10 per million, and its small input) fits the $0.005 budget;
    // without max_tokens it would reserve [limits] default_output_tokens (4096, $0.04) and be refused.
    // Its answer reports $0.0058: the spend passes the budget.
    const { response } = await openai(BUDGET_KEY).chat.completions.create({ model: "gpt-5", max_tokens: 400, messages: [{ role: "user", content: "spend" }] }).withResponse()
    expect(response.headers.get("x-gw-cost-usd")).toBe("0.0058")
    const deadline = Date.now() + 5000
    while ((await redis.get(spent)) !== "5800" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await redis.get(spent)).toBe("5800")

    const refused = await openai(BUDGET_KEY).chat.completions.create({ model: "gpt-5", messages: [{ role: "user", content: "more" }] }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError)
    const error = refused as InstanceType<typeof OpenAI.RateLimitError>
    expect([error.status, error.code, error.type, error.headers.get("x-gw-error-code"), error.headers.get("x-should-retry")]).toEqual([429, "insufficient_quota", "insufficient_quota", "quota", "false"])
    expect(error.message).toContain("budget per day")
    expect(Number(error.headers.get("retry-after"))).toBeGreaterThan(0)

    const claude = new Anthropic({ baseURL: gateway.url, apiKey: "sk-caller", maxRetries: 2, defaultHeaders: { "x-gw-authorization": `Bearer ${BUDGET_KEY}` } })
    const anthropicRefusal = await claude.messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "more" }] }).catch((caught: unknown) => caught)
    expect(anthropicRefusal).toBeInstanceOf(Anthropic.RateLimitError)
    expect(openaiUp.requests).toHaveLength(1)
    expect(anthropicUp.requests).toHaveLength(0)
    // x-should-retry: false: the Anthropic SDK, allowed two retries, asked once.
    expect(gateway.requestLogs().filter((line) => line.key === `budget-${RUN}` && line.status === 429)).toHaveLength(2)
    // Another key's requests are not refused.
    openaiUp.script(answerWithUsage("chatcmpl-other", "gpt-5"))
    expect((await openai().chat.completions.create({ model: "gpt-5", messages: [{ role: "user", content: "fine" }] })).id).toBe("chatcmpl-other")
  })
})

/** Waits (bounded) until the store holds `expected` at `key`. */
const storeReaches = async (key: string, expected: string): Promise<string | null> => {
  const deadline = Date.now() + 5000
  while ((await redis.get(key)) !== expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  return redis.get(key)
}

/** The span of the GenAI operation `operation` on `model`, once exported. */
const spanOf = async (operation: string, model: string) => {
  const matches = (span: { attributes: Record<string, unknown> }) => span.attributes["gen_ai.operation.name"] === operation && span.attributes["gen_ai.request.model"] === model
  await genai.waitFor((receiver) => receiver.spans().some(matches))
  return genai.spans().find(matches)!
}

describe("the cost of the other endpoints that report usage", () => {
  it("embeddings: prompt_tokens at the model's input price in x-gw-cost-usd, the log line and the span; settled against the key's budget, which then refuses", async () => {
    const day = new Date().toISOString().slice(0, 10)
    const spent = `gw:limits:{key:embed-${RUN}}:usd:${day}`
    openaiUp.script({
      kind: "json",
      body: { object: "list", model: "house-embed", data: [{ object: "embedding", index: 0, embedding: [0.25, -0.5] }], usage: { prompt_tokens: 8000, total_tokens: 8000 } }
    })
    const lines = gateway.requestLogs().length
    const { data, response } = await openai(EMBED_KEY).embeddings.create({ model: "house-embed", input: "price this", encoding_format: "float" }).withResponse()
    expect(data.data[0]?.embedding).toEqual([0.25, -0.5])
    // 8000 input tokens × $0.13 per million.
    const expected = (8000 * 0.13) / 1e6
    expect(expected).toBeCloseTo(0.00104, 10)
    expect(Number(response.headers.get("x-gw-cost-usd"))).toBeCloseTo(expected, 10)
    const line = await lastRequestLine(lines + 1)
    expect([line.input_tokens, line.cost_usd]).toEqual([8000, expected])
    expect((await spanOf("embeddings", "house-embed")).attributes["gateway.cost_usd"]).toBeCloseTo(expected, 10)
    // Settled: the day's spend is the cost (micro-USD), past the $0.001 budget, so the next request is refused before any upstream call.
    expect(await storeReaches(spent, "1040")).toBe("1040")
    const refused = await openai(EMBED_KEY).embeddings.create({ model: "house-embed", input: "more" }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError)
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers.get("x-gw-error-code")).toBe("quota")
    expect(openaiUp.requests).toHaveLength(1)
  })

  it("images: input and output tokens at the model's prices", async () => {
    openaiUp.script({
      kind: "json",
      body: { created: 1, data: [{ b64_json: "aW1n" }], usage: { input_tokens: 50, output_tokens: 4160, total_tokens: 4210, input_tokens_details: { text_tokens: 50, image_tokens: 0 } } }
    })
    const lines = gateway.requestLogs().length
    const { response } = await openai().images.generate({ model: "house-image", prompt: "a priced picture" }).withResponse()
    // 50 input × $5 + 4160 output × $40, per million.
    const expected = (50 * 5 + 4160 * 40) / 1e6
    expect(Number(response.headers.get("x-gw-cost-usd"))).toBeCloseTo(expected, 10)
    const line = await lastRequestLine(lines + 1)
    expect([line.input_tokens, line.output_tokens, line.cost_usd]).toEqual([50, 4160, expected])
  })
})
