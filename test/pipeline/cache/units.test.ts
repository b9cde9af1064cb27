/**
 * The cache's pure parts: the key, encryption at rest, the modes and headers,
 * the entry codec, and the assembly and replay of streamed answers.
 */
import { Redacted, Result } from "effect"
import { describe, expect, it } from "vitest"
import { fingerprinted } from "../../../src/config/index.ts"
import type { ChatResponse, ChatStreamEvent } from "../../../src/domain/index.ts"
import { Anthropic, OpenAiChat, ResponseAssembler, responseEvents } from "../../../src/formats/index.ts"
import { open, seal } from "../../../src/pipeline/cache/crypto.ts"
import { decodeEntry, encodeEntry } from "../../../src/pipeline/cache/entry.ts"
import { cacheKey, cacheUse } from "../../../src/pipeline/cache/index.ts"
import { SseParser } from "../../../src/providers/sse.ts"

const key = fingerprinted(Redacted.make("sk-caller-one"))
const other = fingerprinted(Redacted.make("sk-caller-two"))
const parts = { projectId: "p", credential: key, plan: "openai::gpt-4o", format: "openai", body: { model: "gpt-4o", messages: [{ role: "user", content: "hi" }], temperature: 0 } }

describe("cache key", () => {
  it("ignores key order, stream, stream_options and user", () => {
    const reordered = { temperature: 0, stream: true, stream_options: { include_usage: true }, user: "u-1", messages: [{ content: "hi", role: "user" }], model: "gpt-4o" }
    expect(cacheKey({ ...parts, body: reordered })).toBe(cacheKey(parts))
  })
  it("differs by credential, project, plan, variant parameters, caller format and request", () => {
    const base = cacheKey(parts)
    for (const changed of [
      { ...parts, credential: other },
      { ...parts, credential: fingerprinted(undefined) },
      { ...parts, projectId: "q" },
      { ...parts, plan: "function::f#a" },
      { ...parts, overrides: { temperature: 0.5 } },
      { ...parts, format: "anthropic" },
      { ...parts, body: { ...parts.body, temperature: 1 } }
    ]) expect(cacheKey(changed)).not.toBe(base)
  })
  it("is 64 hex characters: nothing of the request in it", () => {
    expect(cacheKey(parts)).toMatch(/^[0-9a-f]{64}$/)
  })
  it("is the key earlier builds derived: entries stored before an upgrade are still found", () => {
    expect(cacheKey(parts)).toBe("483a2e0265c7ad35053aadedd3a4c48bc32b34a3c56b5925ae2e6845cd9a011f")
    const nested = {
      ...parts,
      overrides: { top_p: 0.5, seed: 7 },
      body: {
        ...parts.body,
        stream: true,
        user: "u",
        tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { b: { type: "string" }, a: { type: "number" } } } } }],
        metadata: { "é": "☃", e: null }
      }
    }
    expect(cacheKey(nested)).toBe("3c8cf832e79adb5374e346507b008d63ad9fd3f90fb3cb93226a2f8dfe828c40")
  })
})

describe("encryption at rest", () => {
  const options = { encrypt: true, salt: "s4lt", projectId: "p", credential: key, entryKey: "a".repeat(64) }
  const plaintext = Buffer.from(JSON.stringify({ answer: "the secret answer is 42" }))
  it("round-trips, with a fresh nonce each time, and shows nothing of the plaintext", () => {
    const first = seal(plaintext, options)
    const second = seal(plaintext, options)
    expect(first.equals(second)).toBe(false)
    expect(first.toString("latin1")).not.toContain("secret answer")
    expect(open(first, options)?.equals(plaintext)).toBe(true)
  })
  it("never repeats a nonce, over many values in a row", () => {
    const nonces = new Set<string>()
    for (let i = 0; i < 1000; i++) {
      const sealed = seal(plaintext, options)
      nonces.add(sealed.subarray(1, 13).toString("hex"))
      expect(open(sealed, options)?.equals(plaintext)).toBe(true)
    }
    expect(nonces.size).toBe(1000)
  })
  it("does not open with another credential, another project, another salt, or tampered bytes", () => {
    const sealed = seal(plaintext, options)
    expect(open(sealed, { ...options, credential: other })).toBeUndefined()
    expect(open(sealed, { ...options, projectId: "q" })).toBeUndefined()
    expect(open(sealed, { ...options, salt: "other" })).toBeUndefined()
    // Moved under another key of the same caller (by anyone who can write to the store): one
    // answer cannot be made to serve another request.
    expect(open(sealed, { ...options, entryKey: "b".repeat(64) })).toBeUndefined()
    const tampered = Buffer.from(sealed)
    tampered[20] ^= 1
    expect(open(tampered, options)).toBeUndefined()
  })
  it("with encrypt = false, values are marked plain; a plain value is never read where encryption is on", () => {
    const plain = seal(plaintext, { ...options, encrypt: false })
    expect(open(plain, { ...options, encrypt: false })?.equals(plaintext)).toBe(true)
    expect(open(plain, options)).toBeUndefined()
  })
})

describe("modes and headers", () => {
  const use = (...args: Parameters<typeof cacheUse>) => Result.getOrThrow(cacheUse(...args))
  const refusal = (...args: Parameters<typeof cacheUse>) => Result.getOrThrowWith(Result.flip(cacheUse(...args)), () => new Error("expected a 400"))
  const section = { enabled: true, url: "redis://x", default_mode: "auto" as const, ttl_seconds: 600, max_ttl_seconds: 3600, max_entry_size_bytes: 1024, pool_size: 1, encrypt: true, encrypt_salt: "s" }
  it("auto: embeddings always, chat only with temperature 0 or a seed", () => {
    expect(use(section, "embeddings", {}, undefined, undefined)).toEqual({ ttlSeconds: 600, mode: "auto" })
    expect(use(section, "chat", {}, undefined, undefined)).toBeUndefined()
    expect(use(section, "chat", { temperature: 0.7 }, undefined, undefined)).toBeUndefined()
    expect(use(section, "chat", { temperature: 0 }, undefined, undefined)).toEqual({ ttlSeconds: 600, mode: "auto" })
    expect(use(section, "chat", { seed: 7 }, undefined, undefined)).toEqual({ ttlSeconds: 600, mode: "auto" })
  })
  it("always, never and the per-request header", () => {
    expect(use({ ...section, default_mode: "always" }, "chat", {}, undefined, undefined)).toEqual({ ttlSeconds: 600, mode: "always" })
    expect(use({ ...section, default_mode: "never" }, "embeddings", {}, undefined, undefined)).toBeUndefined()
    expect(use(section, "chat", {}, "always", undefined)).toEqual({ ttlSeconds: 600, mode: "always" })
    expect(use(section, "embeddings", {}, "NEVER", undefined)).toBeUndefined()
  })
  it("x-gw-cache-ttl overrides the TTL up to max_ttl_seconds; malformed headers are a 400 naming them", () => {
    expect(use(section, "embeddings", {}, undefined, "60")).toEqual({ ttlSeconds: 60, mode: "auto" })
    expect(use(section, "embeddings", {}, undefined, "999999")).toEqual({ ttlSeconds: 3600, mode: "auto" })
    expect(refusal(section, "embeddings", {}, "sometimes", undefined)).toMatchObject({ status: 400, message: expect.stringContaining("x-gw-cache") })
    expect(refusal(section, "embeddings", {}, undefined, "-5")).toMatchObject({ status: 400, message: expect.stringContaining("x-gw-cache-ttl") })
    expect(refusal(section, "embeddings", {}, undefined, "0")).toMatchObject({ status: 400 })
  })
})

const answer: ChatResponse = {
  id: "msg_1",
  model: "m",
  created: 7,
  content: [{ type: "text", text: "Let me check." }, { type: "tool_call", id: "call_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }],
  stopReason: "tool_use",
  usage: { inputTokens: 11, outputTokens: 5 }
}

describe("entries", () => {
  it("round-trip a chat answer with its bytes, and a body", () => {
    const bytes = Buffer.from("{\"x\":1}")
    const chat = decodeEntry(encodeEntry({ kind: "chat", response: () => answer, body: { status: 200, contentType: "application/json", bytes }, storedAt: 5, provider: "openai" }))
    expect(chat?.kind).toBe("chat")
    if (chat?.kind !== "chat") return
    expect(chat.response()).toEqual(answer)
    expect(chat.body).toEqual({ status: 200, contentType: "application/json", bytes: expect.anything() })
    expect(Buffer.from(chat.body!.bytes).equals(bytes)).toBe(true)
    expect({ storedAt: chat.storedAt, provider: chat.provider }).toEqual({ storedAt: 5, provider: "openai" })
    const streamed = decodeEntry(encodeEntry({ kind: "chat", response: () => answer, storedAt: 5, provider: "openai" }))
    expect(streamed?.kind === "chat" && streamed.body === undefined && streamed.response()).toEqual(answer)
    const body = decodeEntry(encodeEntry({ kind: "body", status: 200, contentType: "application/json", bytes: Buffer.from("[1,2]"), storedAt: 6, provider: "azure" }))
    expect(body?.kind === "body" && { ...body, bytes: Buffer.from(body.bytes).toString() }).toEqual({ kind: "body", status: 200, contentType: "application/json", bytes: "[1,2]", storedAt: 6, provider: "azure" })
    expect(decodeEntry(Buffer.from("not json"))).toBeUndefined()
    expect(decodeEntry(Buffer.from("{\"v\":2}"))).toBeUndefined()
    // Truncated anywhere: not an entry.
    const whole = encodeEntry({ kind: "body", status: 200, contentType: "application/json", bytes: Buffer.from("[1,2]"), storedAt: 6, provider: "azure" })
    for (let cut = 0; cut < whole.length - 5; cut++) expect(decodeEntry(whole.subarray(0, cut))).toBeUndefined()
  })
})

describe("assembling and replaying streamed answers", () => {
  const assemble = (events: ReadonlyArray<ChatStreamEvent>, limit = 1 << 20) => {
    const assembler = new ResponseAssembler(limit)
    for (const event of events) assembler.event(event)
    return assembler.result()
  }
  it("replaying an answer and assembling the replay gives the answer back", () => {
    expect(assemble(responseEvents(answer))).toEqual({ ...answer, stopSequence: undefined })
  })
  it("a real upstream stream, decoded, assembles into its answer", () => {
    const frames = [
      'data: {"id":"chatcmpl-9","model":"gpt-4o","created":3,"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
      'data: {"id":"chatcmpl-9","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
      'data: {"id":"chatcmpl-9","choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n',
      'data: {"id":"chatcmpl-9","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
      'data: {"id":"chatcmpl-9","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}\n\n',
      "data: [DONE]\n\n"
    ]
    const parser = new SseParser()
    const decoder = OpenAiChat.makeOpenAiChatStreamDecoder()
    const events = frames.flatMap((frame) => parser.push(Buffer.from(frame)).flatMap((sse) => [...decoder.push(sse)]))
    expect(assemble(events)).toMatchObject({ id: "chatcmpl-9", model: "gpt-4o", content: [{ type: "text", text: "Hello" }], stopReason: "end_turn", usage: { inputTokens: 4, outputTokens: 2 } })
  })
  it("a stream that did not finish, failed, or outgrew the bound assembles into nothing", () => {
    const events = responseEvents(answer)
    expect(assemble(events.slice(0, -1))).toBeUndefined()
    expect(assemble([...events.slice(0, 2), { type: "error", error: { type: "api_error", message: "x" } }])).toBeUndefined()
    expect(assemble(events, 5)).toBeUndefined()
  })
  it("a replay encodes into each caller format's own stream", () => {
    const encoder = Anthropic.makeAnthropicStreamEncoder()
    const text = responseEvents(answer).map((event) => encoder.push(event)).join("")
    expect(text).toContain("event: message_start")
    expect(text).toContain('"type":"tool_use"')
    expect(text.trimEnd().endsWith('data: {"type":"message_stop"}')).toBe(true)
  })
})
