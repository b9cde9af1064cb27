/**
 * Rate limits per gateway key, exact across replicas: two gateway processes
 * (`node src/main.ts serve`) share one Redis (`[limits] url`) and a fake
 * upstream on loopback. A bounded burst through both admits no more than each
 * key's requests per minute between them; token limits reserve the estimate
 * and settle with the usage reported; a concurrency limit refuses at once.
 * Every refusal is a 429 `rate_limit` with `retry-after` and OpenAI's
 * `x-ratelimit-*` headers, parsed by the official SDKs (whose retry honours
 * it). The store unreachable: `on_store_error` allows or denies. No key is
 * ever in Redis, a log line or an error.
 */
import Anthropic from "@anthropic-ai/sdk"
import { Redis } from "ioredis"
import OpenAI from "openai"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { REDIS_URL } from "../tenancy/support.ts"
import { startCli } from "../cli/process.ts"
import { startGateway } from "./harness.ts"

/** Each test starts Node processes; on a busy machine that alone can take seconds. */
const PROCESS_TIMEOUT_MS = 60_000
const RUN = randomUUID().slice(0, 8)
const KEYS = {
  KEY_A: `gwk-a-${RUN}-0f5c2e9d`,
  KEY_B: `gwk-b-${RUN}-8e1d7a3c`,
  KEY_TOK: `gwk-tok-${RUN}-2b6f0a94`,
  KEY_CONC: `gwk-conc-${RUN}-c3a85e17`,
  KEY_SPEND: `gwk-spend-${RUN}-9d04b6e2`,
  KEY_FILES: `gwk-files-${RUN}-5e7f1c08`,
  KEY_OUT: `gwk-out-${RUN}-7a2d94c1`,
  KEY_CAP: `gwk-cap-${RUN}-3f8b60d2`
}
const BUDGET_USD = 0.01
const RPM_A = 10
const RPM_B = 5
const TPM = 300
/** `[limits] default_output_tokens`, and the token limit of the key whose requests name no max_tokens. */
const DEFAULT_OUTPUT = 600
const TPM_OUT = 2000
/** `[models.claude-capped] max_tokens`: the limit a translated request to it is sent with. */
const CAPPED_MAX = 150

/** The fake upstreams (OpenAI, Anthropic), the gateways' directory and a Redis client to inspect the store. */
let upstream: FakeUpstream, claudeUpstream: FakeUpstream, dir: string, redis: Redis
const gateways: Array<{ readonly url: string; readonly logLines: () => Array<Record<string, unknown>>; readonly stop: () => Promise<unknown> }> = []

const config = () => `
[server]
host = "127.0.0.1"
port = 0

[telemetry]
enabled = false

[providers.openai]
base_url = "${upstream.url}/v1"
models = ["gpt-4o"]
credential = "none"

[providers.anthropic]
base_url = "${claudeUpstream.url}"
models = ["claude-e2e", "claude-capped"]
credential = "none"

[models.claude-capped]
max_tokens = ${CAPPED_MAX}

[limits]
url = "${REDIS_URL}"
default_output_tokens = ${DEFAULT_OUTPUT}

[keys.a-${RUN}]
key = "env::KEY_A"
requests_per_minute = ${RPM_A}

[keys.b-${RUN}]
key = "env::KEY_B"
requests_per_minute = ${RPM_B}

[keys.tok-${RUN}]
key = "env::KEY_TOK"
tokens_per_minute = ${TPM}

[keys.conc-${RUN}]
key = "env::KEY_CONC"
concurrent_requests = 1

[keys.spend-${RUN}]
key = "env::KEY_SPEND"
budget_usd_per_day = ${BUDGET_USD}

[keys.out-${RUN}]
key = "env::KEY_OUT"
tokens_per_minute = ${TPM_OUT}

[keys.cap-${RUN}]
key = "env::KEY_CAP"
tokens_per_minute = ${TPM_OUT}

[keys.files-${RUN}]
key = "env::KEY_FILES"
requests_per_minute = 2
`

const startProcess = async (path: string) => {
  const cli = startCli(["serve", "--config", path], KEYS)
  const listening = await cli.logLine("listening", PROCESS_TIMEOUT_MS)
  return {
    url: `http://127.0.0.1:${listening.port as number}`,
    logLines: cli.logLines,
    stop: () => {
      cli.child.kill("SIGTERM")
      return cli.finished
    }
  }
}

beforeAll(async () => {
  ;[upstream, claudeUpstream] = await Promise.all([startFakeUpstream({ kind: "openai" }), startFakeUpstream({ kind: "anthropic" })])
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  dir = mkdtempSync(join(tmpdir(), "gateway-limits-"))
  const path = join(dir, "gateway.toml")
  writeFileSync(path, config())
  gateways.push(...(await Promise.all([startProcess(path), startProcess(path)])))
}, PROCESS_TIMEOUT_MS * 2)

afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()))
  const keys = await redis.keys(`gw:limits:{key:*-${RUN}}:*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
  await Promise.all([upstream?.close(), claudeUpstream?.close()])
  rmSync(dir, { recursive: true, force: true })
})

const client = (gateway: number, key: string, maxRetries = 0) =>
  new OpenAI({ baseURL: `${gateways[gateway].url}/v1`, apiKey: "sk-caller", maxRetries, defaultHeaders: { "x-gw-authorization": `Bearer ${key}` } })

const ask = (gateway: number, key: string, options: { readonly maxTokens?: number; readonly maxRetries?: number } = {}) =>
  client(gateway, key, options.maxRetries).chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "hello there" }],
    ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens })
  }).withResponse()

type Outcome = { readonly ok: true; readonly tokens: number } | { readonly ok: false; readonly error: unknown }

const outcome = (request: ReturnType<typeof ask>): Promise<Outcome> =>
  request.then(({ data }) => ({ ok: true as const, tokens: data.usage?.total_tokens ?? 0 }), (error: unknown) => ({ ok: false as const, error }))

/** Polls a condition for at most `timeoutMs` (settlement is written when the response closes). */
const eventually = async (check: () => Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time")
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("two gateways, one store", () => {
  it("a burst through both admits exactly each key's requests per minute between them; every refusal is a 429 OpenAI's SDK reads", async () => {
    const burst = [
      ...Array.from({ length: 3 * RPM_A }, (_, i) => outcome(ask(i % 2, KEYS.KEY_A))),
      ...Array.from({ length: 3 * RPM_B }, (_, i) => outcome(ask(i % 2, KEYS.KEY_B)))
    ]
    const results = await Promise.all(burst)
    const a = results.slice(0, 3 * RPM_A)
    const b = results.slice(3 * RPM_A)
    expect(a.filter((result) => result.ok)).toHaveLength(RPM_A)
    expect(b.filter((result) => result.ok)).toHaveLength(RPM_B)
    for (const result of [...a, ...b].filter((result) => !result.ok)) {
      const error = (result as { error: unknown }).error
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      const refusal = error as InstanceType<typeof OpenAI.RateLimitError>
      expect([refusal.status, refusal.type, refusal.code, refusal.headers.get("x-gw-error-code")]).toEqual([429, "rate_limit_error", "rate_limit_exceeded", "rate_limit"])
      expect(Number(refusal.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      expect(Number(refusal.headers.get("retry-after"))).toBeLessThanOrEqual(60)
      expect(refusal.headers.get("x-ratelimit-remaining-requests")).toBe("0")
      expect(refusal.headers.get("x-ratelimit-reset-requests")).toMatch(/^(\d+m)?\d+(ms|s)$/)
      expect(refusal.message).toContain("requests per minute")
    }
    const limit = (a.find((result) => !result.ok) as { error: InstanceType<typeof OpenAI.RateLimitError> }).error.headers.get("x-ratelimit-limit-requests")
    expect(limit).toBe(String(RPM_A))
    expect(upstream.requests.filter((request) => request.path.includes("chat"))).toHaveLength(RPM_A + RPM_B)
    // Each gateway's /metrics counts the refusals it answered as the gateway's own (the upstream refused none).
    const scraped = await Promise.all(gateways.map(async (gateway) => (await fetch(`${gateway.url}/metrics`)).text()))
    const refusals = (text: string, source: string) => Number(new RegExp(`^gateway_rate_limit_refusals_total\\{source="${source}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0)
    expect(scraped.reduce((sum, text) => sum + refusals(text, "gateway"), 0)).toBe(2 * RPM_A + 2 * RPM_B)
    expect(scraped.reduce((sum, text) => sum + refusals(text, "upstream"), 0)).toBe(0)
  }, PROCESS_TIMEOUT_MS)

  it("an admitted answer carries the x-ratelimit headers; a token limit reserves the estimate and settles with the usage reported", async () => {
    const tokv = `gw:limits:{key:tok-${RUN}}:tokv`
    const first = await ask(0, KEYS.KEY_TOK, { maxTokens: 50 })
    expect(first.response.headers.get("x-ratelimit-limit-tokens")).toBe(String(TPM))
    const used = first.data.usage!.total_tokens
    // Once settled, the window holds what the answer used, not the estimate (body/4 + max_tokens > 50).
    await eventually(async () => (await redis.hget(tokv, "#")) === String(used))
    const second = await ask(1, KEYS.KEY_TOK, { maxTokens: 50 })
    const remaining = Number(second.response.headers.get("x-ratelimit-remaining-tokens"))
    expect(remaining).toBeLessThan(TPM - used - 50)
    expect(remaining).toBeGreaterThan(TPM - used - 50 - 60)
    await eventually(async () => (await redis.hget(tokv, "#")) === String(used + second.data.usage!.total_tokens))

    // A burst of reservations: admitted while the reserved tokens fit; the tokens used stay within the limit plus one estimate.
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => outcome(ask(i % 2, KEYS.KEY_TOK, { maxTokens: 100 }))))
    const admitted = results.filter((result): result is { ok: true; tokens: number } => result.ok)
    const refused = results.filter((result) => !result.ok)
    expect(refused.length).toBeGreaterThan(0)
    expect(admitted.length).toBeGreaterThan(0)
    const estimate = 100 + 40
    expect(used + second.data.usage!.total_tokens + admitted.reduce((sum, result) => sum + result.tokens, 0)).toBeLessThanOrEqual(TPM + estimate)
    const refusal = (refused[0] as { error: InstanceType<typeof OpenAI.RateLimitError> }).error
    expect(refusal).toBeInstanceOf(OpenAI.RateLimitError)
    expect(refusal.headers.get("x-ratelimit-limit-tokens")).toBe(String(TPM))
    expect(refusal.message).toContain("tokens per minute")
  }, PROCESS_TIMEOUT_MS)

  it("a request without max_tokens reserves default_output_tokens: a burst of long answers uses no more than the limit plus one estimate", async () => {
    const tokv = `gw:limits:{key:out-${RUN}}:tokv`
    // Every answer is long: 20 tokens in, 580 out, none of them asked for a limit.
    upstream.setDefault({
      kind: "json",
      body: {
        id: "chatcmpl-long",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o",
        choices: [{ index: 0, message: { role: "assistant", content: "a long answer", refusal: null }, finish_reason: "stop", logprobs: null }],
        usage: { prompt_tokens: 20, completion_tokens: 580, total_tokens: 600 }
      }
    })
    try {
      const first = await ask(0, KEYS.KEY_OUT)
      // Reserved: the body (< 60 tokens at 4 bytes each) and the default output.
      const remaining = Number(first.response.headers.get("x-ratelimit-remaining-tokens"))
      expect(remaining).toBeLessThanOrEqual(TPM_OUT - DEFAULT_OUTPUT)
      expect(remaining).toBeGreaterThan(TPM_OUT - DEFAULT_OUTPUT - 60)
      await eventually(async () => (await redis.hget(tokv, "#")) === "600")

      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => outcome(ask(i % 2, KEYS.KEY_OUT))))
      const admitted = results.filter((result): result is { ok: true; tokens: number } => result.ok)
      expect(admitted.length).toBeGreaterThan(0)
      expect(results.length - admitted.length).toBeGreaterThan(0)
      const used = 600 + admitted.reduce((sum, result) => sum + result.tokens, 0)
      expect(used).toBeLessThanOrEqual(TPM_OUT + DEFAULT_OUTPUT + 60)
    } finally {
      upstream.setDefault(undefined)
    }
  }, PROCESS_TIMEOUT_MS)

  it("a request without max_tokens to a model whose max_tokens is configured reserves that limit, which its upstream is sent", async () => {
    const { response } = await client(1, KEYS.KEY_CAP).chat.completions.create({ model: "claude-capped", messages: [{ role: "user", content: "hello there" }] }).withResponse()
    const remaining = Number(response.headers.get("x-ratelimit-remaining-tokens"))
    expect(remaining).toBeLessThanOrEqual(TPM_OUT - CAPPED_MAX)
    expect(remaining).toBeGreaterThan(TPM_OUT - CAPPED_MAX - 60)
    expect((claudeUpstream.requests.at(-1)?.json as { max_tokens?: number }).max_tokens).toBe(CAPPED_MAX)
  }, PROCESS_TIMEOUT_MS)

  it("a request over the concurrency limit is refused at once; the SDKs read the 429 and OpenAI's retry honours retry-after", async () => {
    upstream.script({ kind: "delay", ms: 600 })
    const before = upstream.requests.length
    const claudeBefore = claudeUpstream.requests.length
    const running = ask(0, KEYS.KEY_CONC)
    await eventually(async () => upstream.requests.length > before)
    const anthropic = new Anthropic({ baseURL: gateways[1].url, apiKey: "sk-caller", maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${KEYS.KEY_CONC}` } })
    const refused = await anthropic.messages.create({ model: "claude-e2e", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError)
    const error = refused as InstanceType<typeof Anthropic.RateLimitError>
    expect(error.headers.get("retry-after")).toBe("1")
    expect((error.error as { error?: { type?: string } }).error?.type).toBe("rate_limit_error")
    expect(error.message).toContain("concurrent requests")
    expect(claudeUpstream.requests).toHaveLength(claudeBefore)

    // Refused while the first still runs, then retried by the SDK after retry-after, by which time the slot is free.
    const retried = await ask(1, KEYS.KEY_CONC, { maxRetries: 2 })
    expect(retried.data.choices[0].message.content).toBe("echo: hello there")
    await running
    // The Anthropic caller's refusal, the OpenAI caller's refused first attempt, then its retry.
    const lines = () => gateways[1].logLines().filter((line) => line.msg === "request" && line.key === `conc-${RUN}`)
    await eventually(async () => lines().length >= 3)
    expect(lines().map((line) => line.status)).toEqual([429, 429, 200])
    expect(lines()[1].limits).toBe("refused")
  }, PROCESS_TIMEOUT_MS)

  it("a burst against a daily budget: each admission reserves its most expensive estimate, so the spend never passes the budget", async () => {
    // gpt-4o ($2.50 in, $10 out per million): max_tokens 100 reserves a little over $0.001; the answers cost far less.
    // The upstream holds each answer a second, so every admission of the burst happens before any settlement.
    upstream.script({ kind: "delay", ms: 1000, times: 16 })
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) =>
      ask(i % 2, KEYS.KEY_SPEND, { maxTokens: 100 }).then(
        ({ response }) => ({ ok: true as const, cost: Number(response.headers.get("x-gw-cost-usd")) }),
        (error: unknown) => ({ ok: false as const, error })
      )))
    const admitted = results.filter((result) => result.ok)
    const refused = results.filter((result) => !result.ok)
    expect(admitted.length).toBeGreaterThan(0)
    expect(admitted.length).toBeLessThanOrEqual(Math.floor(BUDGET_USD / 0.001))
    expect(refused.length).toBeGreaterThan(0)
    for (const result of refused) {
      const error = (result as { error: InstanceType<typeof OpenAI.RateLimitError> }).error
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect([error.code, error.headers.get("x-gw-error-code")]).toEqual(["insufficient_quota", "quota"])
    }
    const spent = admitted.reduce((sum, result) => sum + (result as { cost: number }).cost, 0)
    expect(spent).toBeGreaterThan(0)
    expect(spent).toBeLessThanOrEqual(BUDGET_USD)
    // Once settled, the store holds what was spent (micro-USD), not the reservations.
    const day = `gw:limits:{key:spend-${RUN}}:usd:${new Date().toISOString().slice(0, 10)}`
    await eventually(async () => Math.abs(Number(await redis.get(day)) - spent * 1e6) <= admitted.length)
  }, PROCESS_TIMEOUT_MS)

  it("requests that name no model (files) count toward the key's requests too", async () => {
    const files = (gateway: number) => client(gateway, KEYS.KEY_FILES).files.list().then(() => "ok", (error: unknown) => error)
    expect(await files(0)).toBe("ok")
    expect(await files(1)).toBe("ok")
    const refused = await files(0)
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError)
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers.get("x-ratelimit-limit-requests")).toBe("2")
  })

  it("no key is in the store, a log line or an error body", async () => {
    const names = await redis.keys(`gw:limits:{key:*-${RUN}}:*`)
    expect(names.length).toBeGreaterThan(0)
    let stored = names.join("\n")
    for (const name of names) {
      const type = await redis.type(name)
      if (type === "zset") stored += (await redis.zrange(name, "0", "-1")).join("\n")
      else if (type === "hash") stored += JSON.stringify(await redis.hgetall(name))
      else if (type === "string") stored += String(await redis.get(name))
    }
    const logs = gateways.map((gateway) => JSON.stringify(gateway.logLines())).join("\n")
    for (const key of Object.values(KEYS)) {
      expect(stored).not.toContain(key)
      expect(logs).not.toContain(key)
    }
  })
})

describe("the store unreachable", () => {
  const document = (onStoreError: "allow" | "deny") => ({
    providers: { openai: { base_url: `${upstream.url}/v1`, models: ["gpt-4o"], credential: "none" } },
    telemetry: { enabled: false },
    // Port 9 (discard): nothing answers Redis there.
    limits: { url: "redis://:store-password@127.0.0.1:9", on_store_error: onStoreError, timeout_ms: 100 },
    keys: { team: { key: "env::TEAM_KEY", requests_per_minute: 1 } }
  })

  it("on_store_error = allow admits uncounted and logs it (without the store's password); deny answers 503", async () => {
    const allow = await startGateway(document("allow"), { TEAM_KEY: KEYS.KEY_A })
    const deny = await startGateway(document("deny"), { TEAM_KEY: KEYS.KEY_A })
    try {
      const open = new OpenAI({ baseURL: `${allow.url}/v1`, apiKey: "sk", maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${KEYS.KEY_A}` } })
      for (let i = 0; i < 3; i++) {
        expect((await open.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })).choices).toHaveLength(1)
      }
      const warning = allow.logs.find((line) => line.msg === "limits store unavailable")
      expect(warning).toMatchObject({ level: "warn", on_store_error: "allow" })
      expect(JSON.stringify(allow.logs)).not.toContain("store-password")
      expect(allow.requestLogs().map((line) => line.limits)).toEqual(["uncounted", "uncounted", "uncounted"])
      expect(await (await fetch(`${allow.url}/metrics`)).text()).toMatch(/^gateway_limits_uncounted_total\{on_store_error="allow"\} 3$/m)

      const closed = new OpenAI({ baseURL: `${deny.url}/v1`, apiKey: "sk", maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${KEYS.KEY_A}` } })
      const refused = await closed.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(OpenAI.InternalServerError)
      expect((refused as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(503)
    } finally {
      await Promise.all([allow.close(), deny.close()])
    }
  })
})
