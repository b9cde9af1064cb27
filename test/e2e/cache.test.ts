/**
 * The response cache against a real Redis (database 3 of the local server,
 * emptied first): hits and misses, age, modes and TTLs, oversize entries,
 * what an operator sees in Redis, and hits replayed as streams the official
 * SDKs' stream helpers accept, on same-format and translated routes.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { Redacted } from "effect"
import { Redis } from "ioredis"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { fingerprinted } from "../../src/config/index.ts"
import { open } from "../../src/pipeline/cache/crypto.ts"
import { decodeEntry } from "../../src/pipeline/cache/entry.ts"
import { openAiChunk, openAiStream } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, startGateway, waitForRequestLogs } from "./harness.ts"

const REDIS_URL = `${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/3`
const SALT = "cache-e2e-salt"
const CONFIGURED = "sk-configured-openai-key-0123456789"

let redis: Redis

// Database 3, emptied before the gateway starts, before each test and after the gateway closed.
beforeAll(async () => {
  redis = new Redis(REDIS_URL)
  await redis.flushdb()
})
afterAll(async () => {
  await redis.flushdb()
  redis.disconnect()
})
beforeEach(async () => {
  await redis.flushdb()
})

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "text-embedding-3-small"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "env::ANTHROPIC_KEY" }
    },
    cache: { enabled: true, url: REDIS_URL, encrypt_salt: SALT, max_ttl_seconds: 3600, ttl_seconds: 600, max_entry_size_bytes: 8192, pool_size: 2 }
  }),
  { OPENAI_KEY: CONFIGURED, ANTHROPIC_KEY: "sk-ant-configured-key-0123456789" }
)

const openai = (key?: string) =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key ?? "unused", maxRetries: 0, ...(key === undefined ? { defaultHeaders: { authorization: null } } : {}) })
const anthropic = () => new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })

/** Waits until the background write of the last answer reached Redis. */
const stored = async (count: number) => {
  const deadline = Date.now() + 3000
  while ((await redis.keys("gw:cache:v1:*")).length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} entries`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

let runs = 0
/** A prompt no other test uses, so each test starts from a miss. */
const prompt = (text: string) => `${text} #${++runs}`

describe("hits and misses", () => {
  it("a second identical request is a hit: the provider saw one request, and the age counts up", async () => {
    const body = { model: "gpt-4o", temperature: 0, messages: [{ role: "user" as const, content: prompt("remember me") }] }
    const first = await openai().chat.completions.create(body).withResponse()
    expect(first.response.headers.get("x-gw-cache")).toBe("miss")
    await stored(1)
    const second = await openai().chat.completions.create(body).withResponse()
    expect(second.response.headers.get("x-gw-cache")).toBe("hit")
    expect(second.response.headers.get("x-gw-upstream-provider")).toBe("openai")
    expect(second.data).toEqual(first.data)
    expect(fakes.openai.requests.length).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const third = await openai().chat.completions.create(body).withResponse()
    expect(Number(third.response.headers.get("x-gw-cache-age"))).toBeGreaterThanOrEqual(1)
  })

  it("a different request, a different caller key, x-gw-cache: never, or a sampled request is a miss", async () => {
    const text = prompt("distinct")
    const body = { model: "gpt-4o", temperature: 0, messages: [{ role: "user" as const, content: text }] }
    await openai().chat.completions.create(body)
    await stored(1)
    const outcomes = [
      await openai().chat.completions.create({ ...body, messages: [{ role: "user", content: `${text}!` }] }).withResponse(),
      await openai("sk-caller-a-0123456789").chat.completions.create(body).withResponse(),
      await openai("sk-caller-b-0123456789").chat.completions.create(body).withResponse(),
      await openai().chat.completions.create(body, { headers: { "x-gw-cache": "never" } }).withResponse(),
      await openai().chat.completions.create({ ...body, temperature: 0.7 }).withResponse()
    ]
    expect(outcomes.map((outcome) => outcome.response.headers.get("x-gw-cache"))).toEqual(["miss", "miss", "miss", "miss", "miss"])
    expect(fakes.openai.requests.length).toBe(6)
    // The two callers' own keys each got an entry of their own: each hits its own.
    const again = await openai("sk-caller-a-0123456789").chat.completions.create(body).withResponse()
    expect(again.response.headers.get("x-gw-cache")).toBe("hit")
  })

  it("x-gw-cache-ttl sets the entry's lifetime, capped by max_ttl_seconds", async () => {
    await redis.flushdb()
    await openai().chat.completions.create({ model: "gpt-4o", temperature: 0, messages: [{ role: "user", content: prompt("short") }] }, { headers: { "x-gw-cache-ttl": "60" } })
    await stored(1)
    const [short] = await redis.keys("gw:cache:v1:*")
    expect(await redis.ttl(short)).toBeGreaterThan(50)
    expect(await redis.ttl(short)).toBeLessThanOrEqual(60)
    await redis.flushdb()
    await openai().chat.completions.create({ model: "gpt-4o", temperature: 0, messages: [{ role: "user", content: prompt("long") }] }, { headers: { "x-gw-cache-ttl": "999999" } })
    await stored(1)
    const [long] = await redis.keys("gw:cache:v1:*")
    expect(await redis.ttl(long)).toBeGreaterThan(3500)
    expect(await redis.ttl(long)).toBeLessThanOrEqual(3600)
  })

  it("an answer larger than max_entry_size_bytes is not stored", async () => {
    await redis.flushdb()
    const body = { model: "gpt-4o", temperature: 0, messages: [{ role: "user" as const, content: prompt("big ".repeat(3000)) }] }
    await openai().chat.completions.create(body)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await redis.keys("gw:cache:v1:*")).toEqual([])
    expect((await openai().chat.completions.create(body).withResponse()).response.headers.get("x-gw-cache")).toBe("miss")
  })

  it("embeddings are cached in auto mode", async () => {
    const input = prompt("embed me")
    await openai().embeddings.create({ model: "text-embedding-3-small", input })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const second = await openai().embeddings.create({ model: "text-embedding-3-small", input }).withResponse()
    expect(second.response.headers.get("x-gw-cache")).toBe("hit")
    expect(fakes.openai.requests.length).toBe(1)
  })

  it("every model answer of the cache-enabled gateway says hit or miss, errors included", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "nope", messages: [] }) })
    expect(response.status).toBe(404)
    expect(response.headers.get("x-gw-cache")).toBe("miss")
  })
})

describe("what is never kept", () => {
  const ask = (content: string, stream = false) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", temperature: 0, stream, messages: [{ role: "user", content }] })
    })

  it("an upstream error is not stored: the same request goes upstream again", async () => {
    const content = prompt("fails first")
    fakes.openai.script({ kind: "error", status: 400, message: "bad" })
    expect((await ask(content)).status).toBe(400)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await redis.keys("gw:cache:v1:*")).toEqual([])
    const second = await ask(content)
    expect(second.status).toBe(200)
    expect(second.headers.get("x-gw-cache")).toBe("miss")
    expect(fakes.openai.requests.length).toBe(2)
  })

  it("a stream that did not finish is not stored", async () => {
    const content = prompt("cut short")
    fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "half an ans" })], thenError: "close" })
    await (await ask(content, true)).text().catch(() => "")
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await redis.keys("gw:cache:v1:*")).toEqual([])
    const again = await ask(content, true)
    expect(again.headers.get("x-gw-cache")).toBe("miss")
    expect(await again.text()).toContain("[DONE]")
    expect(fakes.openai.requests.length).toBe(2)
  })

  it("an answer the output guardrail refused is not stored", async () => {
    const guarded = await startGateway({
      providers: { openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "none" } },
      security: { enabled: true, output_guardrails: true, blocklist: ["forbidden-word"] },
      cache: { enabled: true, url: REDIS_URL, encrypt_salt: SALT, default_mode: "always" }
    })
    try {
      // The fake echoes the prompt, so the answer carries the blocked term; the prompt itself is
      // checked too, so it reaches the upstream spelled apart and comes back whole via the script.
      fakes.openai.script({ kind: "json", body: { id: "c1", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "the forbidden-word" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } } })
      const body = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: prompt("say it") }] })
      const refused = await fetch(`${guarded.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body })
      expect(refused.status).toBe(422)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await redis.keys("gw:cache:v1:*")).toEqual([])
      const again = await fetch(`${guarded.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body })
      expect(again.status).toBe(200)
      expect(again.headers.get("x-gw-cache")).toBe("miss")
      expect(fakes.openai.requests.length).toBe(2)
      // A streamed answer with the term went out (a stream cannot be withheld) and is recorded, never kept.
      await again.text()
      await stored(1)
      const kept = await redis.keys("gw:cache:v1:*")
      fakes.openai.script({ kind: "sse", events: openAiStream({ model: "gpt-4o", content: ["the ", "forbidden-word"] }) })
      const streamed = await fetch(`${guarded.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: prompt("stream it") }] }) })
      expect(await streamed.text()).toContain("[DONE]")
      await waitForRequestLogs(guarded, 3)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(guarded.requestLogs()[2]).toMatchObject({ stream: true, guardrail_output: "blocklist" })
      expect(await redis.keys("gw:cache:v1:*")).toEqual(kept)
    } finally {
      await guarded.close()
    }
  })

  it("a request the input guardrail refuses carries no x-gw-cache: the cache was never consulted", async () => {
    const guarded = await startGateway({
      providers: { openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "text-embedding-3-small"], credential: "none" } },
      security: { enabled: true, blocklist: ["forbidden-word"] },
      cache: { enabled: true, url: REDIS_URL, encrypt_salt: SALT, default_mode: "always" }
    })
    try {
      const post = (path: string, body: object) =>
        fetch(`${guarded.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      const chat = await post("/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content: "say forbidden-word" }] })
      const embeddings = await post("/v1/embeddings", { model: "text-embedding-3-small", input: "forbidden-word" })
      for (const refused of [chat, embeddings]) {
        expect(refused.status).toBe(400)
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("blocklist_match")
        expect(refused.headers.get("x-gw-cache")).toBeNull()
      }
      // The same gateway still labels an answer it looked up.
      const answered = await post("/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content: prompt("harmless") }] })
      expect(answered.headers.get("x-gw-cache")).toBe("miss")
      expect(fakes.openai.requests.length).toBe(1)
    } finally {
      await guarded.close()
    }
  })

  it("a value that is not an entry (garbage in the store) is a miss, logged once", async () => {
    const content = prompt("garbage later")
    await ask(content)
    await stored(1)
    const [key] = await redis.keys("gw:cache:v1:*")
    const garbage = Buffer.from("\x01not an entry at all, just bytes")
    for (let i = 0; i < 3; i++) {
      await redis.set(key, garbage)
      const response = await ask(content)
      expect(response.status).toBe(200)
      expect(response.headers.get("x-gw-cache")).toBe("miss")
      await response.text()
      // The miss writes a good answer over the garbage in the background; wait for it.
      const deadline = Date.now() + 3000
      while ((await redis.getBuffer(key))?.equals(garbage) !== false) {
        if (Date.now() > deadline) throw new Error("the answer was not stored again")
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    expect(fakes.openai.requests.length).toBe(4)
    const unreadable = gateway.logs.filter((line) => line.msg === "cache unavailable" && line.kind === "unreadable entry")
    expect(unreadable.length).toBe(1)
    // The miss stored a good answer again: the next request is a hit.
    expect((await ask(content)).headers.get("x-gw-cache")).toBe("hit")
  })
})

describe("a streamed answer is kept when its last event arrives", () => {
  const bytes = Buffer.from(openAiStream({
    id: "chatcmpl-cut",
    model: "gpt-4o",
    toolCalls: [{ id: "call_cut", name: "get_weather", argumentPieces: ["{\"ci", "ty\":\"Pa", "ris\"}"] }]
  }).join(""))
  /** Run `offset` of `RUNS` cuts the stream at offset, offset + RUNS, …: together the runs cut it at every position. */
  const RUNS = 48

  it("a streamed tool call is stored however the upstream's writes cut it, even when the caller leaves at [DONE] and the upstream closes late", async () => {
    const options = (key: string) => ({ encrypt: true, salt: SALT, projectId: "default", entryKey: key.slice("gw:cache:v1:".length), credential: fingerprinted(Redacted.make(CONFIGURED)) })
    for (let offset = 0; offset < RUNS; offset++) {
      await redis.flushdb()
      fakes.openai.script({
        kind: "custom",
        handle: async ({ res, wait }) => {
          res.writeHead(200, { "content-type": "text/event-stream" })
          // A short pause after each write, so the gateway reads the pieces apart.
          for (let from = 0, to = offset; from < bytes.length; from = to, to += RUNS) {
            res.write(bytes.subarray(from, Math.min(to, bytes.length)))
            if (!(await wait(1))) return
          }
          // An upstream slow to close after its last event: the body ends when the gateway lets go (or after 2 s).
          await wait(2000)
          res.end()
        }
      })
      const leave = new AbortController()
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        signal: leave.signal,
        headers: { "content-type": "application/json", "x-gw-cache": "always" },
        body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: prompt("cut stream") }] })
      })
      expect(response.headers.get("x-gw-cache")).toBe("miss")
      // The caller reads up to [DONE] (it has the whole answer then) and leaves.
      const reader = response.body!.getReader()
      let text = ""
      while (!text.includes("data: [DONE]")) {
        const { done, value } = await reader.read()
        if (done) break
        text += Buffer.from(value).toString()
      }
      leave.abort()
      expect(text).toContain("data: [DONE]")
      await stored(1)
      const [key] = await redis.keys("gw:cache:v1:*")
      const entry = decodeEntry(open((await redis.getBuffer(key))!, options(key))!)
      expect(entry?.kind === "chat" ? entry.response()?.content : undefined, `cut every ${RUNS} bytes from ${offset}`).toEqual([
        { type: "tool_call", id: "call_cut", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
      ])
    }
  })
})

describe("what an operator sees in Redis", () => {
  it("neither the prompt nor the answer is in a key or a value; another credential cannot open an entry", async () => {
    await redis.flushdb()
    const secret = prompt("the launch code is 1234-ALPHA")
    await openai().chat.completions.create({ model: "gpt-4o", temperature: 0, messages: [{ role: "user", content: secret }] })
    await stored(1)
    const [key] = await redis.keys("gw:cache:v1:*")
    expect(key).toMatch(/^gw:cache:v1:[0-9a-f]{64}$/)
    const value = (await redis.getBuffer(key))!
    expect(value.toString("latin1")).not.toContain("launch code")
    expect(value.toString("latin1")).not.toContain("echo:")
    const options = { encrypt: true, salt: SALT, projectId: "default", entryKey: key.slice("gw:cache:v1:".length) }
    expect(open(value, { ...options, credential: fingerprinted(Redacted.make(CONFIGURED)) })?.toString()).toContain("launch code")
    expect(open(value, { ...options, credential: fingerprinted(Redacted.make("sk-someone-else-0123456789")) })).toBeUndefined()
  })
})

describe("hits replayed as streams the SDKs accept", () => {
  it("OpenAI chat: a non-streamed answer replayed as a stream, text and usage intact", async () => {
    const body = { model: "gpt-4o", temperature: 0, messages: [{ role: "user" as const, content: prompt("stream it later") }] }
    const first = await openai().chat.completions.create(body)
    await stored(1)
    const stream = openai().chat.completions.stream({ ...body, stream_options: { include_usage: true } })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe(first.choices[0].message.content)
    expect(final.usage?.completion_tokens).toBe(first.usage?.completion_tokens)
    expect(fakes.openai.requests.length).toBe(1)
  })

  it("OpenAI chat: a streamed tool call kept and replayed, as a stream and as JSON", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]
    const body = { model: "gpt-4o", seed: 1, tools, messages: [{ role: "user" as const, content: prompt("use tool for Paris") }] }
    const first = await openai().chat.completions.stream(body).finalChatCompletion()
    await stored(1)
    const replayed = await openai().chat.completions.stream(body).finalChatCompletion()
    expect(replayed.choices[0].message.tool_calls).toEqual(first.choices[0].message.tool_calls)
    const json = await openai().chat.completions.create(body).withResponse()
    expect(json.response.headers.get("x-gw-cache")).toBe("hit")
    expect(json.data.choices[0].message.tool_calls?.[0]).toMatchObject({ function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } })
    expect(fakes.openai.requests.length).toBe(1)
  })

  it("Anthropic messages, same format: a streamed answer replayed through the stream helper", async () => {
    const body = { model: "claude-e2e", max_tokens: 100, temperature: 0, messages: [{ role: "user" as const, content: prompt("claude stream") }] }
    const first = await anthropic().messages.stream(body).finalMessage()
    await stored(1)
    const replayed = await anthropic().messages.stream(body).finalMessage()
    expect(replayed.content).toEqual(first.content)
    expect(replayed.usage.output_tokens).toBe(first.usage.output_tokens)
    expect(fakes.anthropic.requests.length).toBe(1)
  })

  it("Anthropic caller on an OpenAI model (translated): non-streamed first, replayed as a stream", async () => {
    const body = { model: "gpt-4o", max_tokens: 100, temperature: 0, messages: [{ role: "user" as const, content: prompt("translate and keep") }] }
    const first = await anthropic().messages.create(body)
    await stored(1)
    const replayed = await anthropic().messages.stream(body).finalMessage()
    expect(replayed.content).toEqual(first.content)
    expect(fakes.openai.requests.length).toBe(1)
  })

  it("Responses API: a streamed answer replayed through responses.stream", async () => {
    const body = { model: "claude-e2e", temperature: 0, input: prompt("responses replay") }
    const first = await openai().responses.stream(body).finalResponse()
    await stored(1)
    const replayed = await openai().responses.stream(body).finalResponse()
    expect(replayed.output_text).toBe(first.output_text)
    expect(fakes.anthropic.requests.length).toBe(1)
  })
})
