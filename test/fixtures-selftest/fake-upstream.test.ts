/**
 * Self-test of the fake upstream: drives it with the official SDKs to prove it speaks the
 * real wire formats, and checks the scripting / disconnect machinery.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { AzureOpenAI, toFile } from "openai"
import { createHash } from "node:crypto"
import { Agent, request as httpRequest } from "node:http"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  anthropicEvent,
  anthropicStream,
  anthropicStreamError,
  fakeEmbedding,
  fakeSpeechBytes,
  openAiChunk,
  openAiStream,
  openAiStreamError,
  promptTokensOf,
  SSE_DONE,
  startFakeUpstream
} from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"

const sha = (b: Buffer | Uint8Array): string => createHash("sha256").update(b).digest("hex")

const weatherToolOpenAi = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Current weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}
const weatherToolAnthropic = {
  name: "get_weather",
  description: "Current weather",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] }
}

describe("fake upstream — OpenAI wire (openai SDK v6)", () => {
  let fake: FakeUpstream
  let client: OpenAI
  beforeAll(async () => {
    fake = await startFakeUpstream({ kind: "openai" })
    client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "test", maxRetries: 0 })
  })
  afterAll(() => fake.close())
  beforeEach(() => fake.reset())

  it("chat non-stream echoes the last user message and the model", async () => {
    const res = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "be terse" },
        { role: "user", content: "hello there" }
      ]
    })
    expect(res.object).toBe("chat.completion")
    expect(res.id).toMatch(/^chatcmpl-/)
    expect(res.model).toBe("gpt-4o-mini")
    expect(res.choices[0].message.content).toBe("echo: hello there")
    expect(res.choices[0].finish_reason).toBe("stop")
    expect(res.usage?.completion_tokens).toBe(3)
    expect(res.usage?.total_tokens).toBe((res.usage?.prompt_tokens ?? 0) + 3)
    expect(res._request_id).toMatch(/^req_fake/)
    const rec = fake.requests[0]
    expect(rec.method).toBe("POST")
    expect(rec.path).toBe("/v1/chat/completions")
    expect(rec.headers.authorization).toBe("Bearer test")
    expect((rec.json as { model: string }).model).toBe("gpt-4o-mini")
    expect(rec.bodySize).toBe(rec.body.length)
    expect(rec.bodySha256).toBe(sha(rec.body))
  })

  it("chat stream: several deltas, finish chunk, usage chunk, [DONE]", async () => {
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "one two three four" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
    expect(text).toBe("echo: one two three four")
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThanOrEqual(4)
    expect(chunks[0].choices[0].delta.role).toBe("assistant")
    const finish = chunks.find((c) => c.choices[0]?.finish_reason)
    expect(finish?.choices[0].finish_reason).toBe("stop")
    const last = chunks[chunks.length - 1]
    expect(last.choices).toEqual([])
    expect(last.usage?.completion_tokens).toBe(5)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
  })

  it("chat stream helper: finalChatCompletion", async () => {
    const final = await client.chat.completions
      .stream({ model: "gpt-4o", messages: [{ role: "user", content: "stream me" }] })
      .finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: stream me")
    expect(final.choices[0].finish_reason).toBe("stop")
  })

  it("raw stream framing is exactly data-lines and [DONE]", async () => {
    const res = await fetch(`${fake.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "x" }] })
    })
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(res.headers.get("x-request-id")).toMatch(/^req_fake/)
    const raw = await res.text()
    expect(raw.endsWith("data: [DONE]\n\n")).toBe(true)
    for (const frame of raw.split("\n\n").filter(Boolean)) expect(frame).toMatch(/^data: /)
    expect(raw).not.toContain('"usage"') // no include_usage → no usage keys
  })

  it("tool call (non-stream and stream) with real fragment shapes", async () => {
    const params = {
      model: "gpt-4o",
      messages: [{ role: "user" as const, content: "please use tool for the weather" }],
      tools: [weatherToolOpenAi]
    }
    const res = await client.chat.completions.create(params)
    expect(res.choices[0].finish_reason).toBe("tool_calls")
    expect(res.choices[0].message.content).toBeNull()
    const call = res.choices[0].message.tool_calls?.[0]
    expect(call?.type).toBe("function")
    expect(call?.type === "function" && call.function).toEqual({ name: "get_weather", arguments: '{"city":"Paris"}' })

    const final = await client.chat.completions.stream(params).finalChatCompletion()
    expect(final.choices[0].finish_reason).toBe("tool_calls")
    const sc = final.choices[0].message.tool_calls?.[0]
    expect(sc?.id).toMatch(/^call_/)
    expect(sc?.type === "function" && sc.function.name).toBe("get_weather")
    expect(sc?.type === "function" && JSON.parse(sc.function.arguments)).toEqual({ city: "Paris" })

    // Without the trigger: plain text; tool_choice forcing a tool triggers it.
    const plain = await client.chat.completions.create({ ...params, messages: [{ role: "user", content: "hi" }] })
    expect(plain.choices[0].message.content).toBe("echo: hi")
    const forced = await client.chat.completions.create({
      ...params,
      messages: [{ role: "user", content: "hi" }],
      tool_choice: { type: "function", function: { name: "get_weather" } }
    })
    expect(forced.choices[0].finish_reason).toBe("tool_calls")
  })

  it("max_tokens truncation gives finish_reason length", async () => {
    const res = await client.chat.completions.create({
      model: "gpt-4o",
      max_completion_tokens: 2,
      messages: [{ role: "user", content: "a b c d e" }]
    })
    expect(res.choices[0].message.content).toBe("echo: a")
    expect(res.choices[0].finish_reason).toBe("length")
  })

  it("validates like the real API", async () => {
    const err = await client.chat.completions
      .create({ model: "gpt-4o", messages: [] })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.BadRequestError)
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages")
  })

  it("embeddings: SDK base64 default decodes to the same floats as encoding_format float", async () => {
    const viaBase64 = await client.embeddings.create({ model: "text-embedding-3-small", input: ["hello", "world"] })
    expect(fake.requests[0].json).toMatchObject({ encoding_format: "base64" })
    expect(viaBase64.data).toHaveLength(2)
    expect(viaBase64.data[0].embedding).toEqual(fakeEmbedding("hello", 32))
    expect(viaBase64.data[1].embedding).toEqual(fakeEmbedding("world", 32))
    const viaFloat = await client.embeddings.create({
      model: "text-embedding-3-small",
      input: "hello",
      encoding_format: "float",
      dimensions: 8
    })
    expect(viaFloat.data[0].embedding).toEqual(fakeEmbedding("hello", 8))
    expect(viaFloat.usage.prompt_tokens).toBeGreaterThan(0)
  })

  it("images: b64_json and url", async () => {
    const b64 = await client.images.generate({ model: "gpt-image-1", prompt: "a cat" })
    expect(b64.data?.[0].b64_json).toMatch(/^iVBOR/)
    expect(b64.usage?.total_tokens).toBeGreaterThan(0)
    const url = await client.images.generate({ model: "dall-e-3", prompt: "a cat", response_format: "url" })
    const png = Buffer.from(await (await fetch(url.data?.[0].url ?? "")).arrayBuffer())
    expect(png.subarray(1, 4).toString()).toBe("PNG")
  })

  it("speech: deterministic binary audio, chunked", async () => {
    const res = await client.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hello world" })
    expect(res.headers.get("content-type")).toBe("audio/mpeg")
    const bytes = Buffer.from(await res.arrayBuffer())
    expect(bytes.equals(fakeSpeechBytes("Hello world"))).toBe(true)
  })

  it("transcription: file size and sha256 arrive intact", async () => {
    const audio = Buffer.alloc(100_000, 7)
    audio.write("RIFF", 0)
    const res = await client.audio.transcriptions.create({
      model: "whisper-1",
      file: await toFile(audio, "speech.wav", { type: "audio/wav" })
    })
    expect(res.text).toContain("100000 bytes")
    expect(res.text).toContain(sha(audio))
    expect(res.text).toContain("model whisper-1")
    const mp = fake.requests[0].multipart
    expect(mp?.fields.model).toBe("whisper-1")
    expect(mp?.files[0]).toMatchObject({ name: "file", filename: "speech.wav", contentType: "audio/wav", size: 100_000 })
    const text = await client.audio.transcriptions.create({
      model: "whisper-1",
      file: await toFile(Buffer.from("abc"), "a.mp3"),
      response_format: "text"
    })
    expect(String(text)).toContain("3 bytes")
  })

  it("files: upload, list, retrieve, content, delete", async () => {
    const small = Buffer.from('{"a":1}\n{"a":2}\n')
    const created = await client.files.create({ file: await toFile(small, "data.jsonl"), purpose: "batch" })
    expect(created).toMatchObject({ object: "file", bytes: small.length, filename: "data.jsonl", purpose: "batch", status: "processed" })
    expect(created.id).toMatch(/^file-/)
    expect(fake.files.get(created.id)?.sha256).toBe(sha(small))

    const big = Buffer.alloc(3 * 1024 * 1024 + 17)
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff
    const bigFile = await client.files.create({ file: await toFile(big, "big.bin"), purpose: "user_data" })
    expect(bigFile.bytes).toBe(big.length)
    expect(fake.files.get(bigFile.id)?.sha256).toBe(sha(big))
    expect(fake.files.get(bigFile.id)?.content).toBeUndefined()
    const upload = fake.requests[1]
    expect(upload.bodyTruncated).toBe(true)
    expect(upload.body.length).toBe(1024 * 1024)
    expect(upload.bodySize).toBeGreaterThan(big.length)

    const list = await client.files.list()
    expect(list.data.map((f) => f.id)).toEqual([bigFile.id, created.id])
    const batchOnly = await client.files.list({ purpose: "batch" })
    expect(batchOnly.data.map((f) => f.id)).toEqual([created.id])
    expect((await client.files.retrieve(created.id)).filename).toBe("data.jsonl")

    const content = Buffer.from(await (await client.files.content(created.id)).arrayBuffer())
    expect(content.equals(small)).toBe(true)
    const bigContent = Buffer.from(await (await client.files.content(bigFile.id)).arrayBuffer())
    expect(bigContent.length).toBe(big.length)

    expect(await client.files.delete(created.id)).toEqual({ id: created.id, object: "file", deleted: true })
    const missing = await client.files.retrieve(created.id).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError)
  })

  it("models list", async () => {
    const models = await client.models.list()
    expect(models.data.map((m) => m.id)).toContain("gpt-4o")
  })

  it("unknown route → 404 in the OpenAI error shape", async () => {
    const res = await fetch(`${fake.url}/v1/nope`, { method: "POST" })
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({
      error: { message: "Invalid URL (POST /v1/nope)", type: "invalid_request_error", param: null, code: null }
    })
  })

  it("error scripts surface as the right SDK error classes", async () => {
    fake.script(
      { kind: "error", status: 429, headers: { "retry-after": "7" } },
      { kind: "error", status: 500, body: { error: { message: "boom sk-secret-123", type: "server_error", param: null, code: null } } },
      { kind: "error", status: 401 },
      { kind: "error", status: 503, body: "" },
      { kind: "error", status: 502, body: "<html>bad gateway" }
    )
    const msg = [{ role: "user" as const, content: "x" }]
    const e429 = await client.chat.completions.create({ model: "m", messages: msg }).catch((e: unknown) => e)
    expect(e429).toBeInstanceOf(OpenAI.RateLimitError)
    const rl = e429 as InstanceType<typeof OpenAI.RateLimitError>
    expect(rl.headers.get("retry-after")).toBe("7")
    expect(rl.code).toBe("rate_limit_exceeded")
    const e500 = await client.chat.completions.create({ model: "m", messages: msg }).catch((e: unknown) => e)
    expect(e500).toBeInstanceOf(OpenAI.InternalServerError)
    expect(String((e500 as Error).message)).toContain("sk-secret-123")
    const e401 = await client.chat.completions.create({ model: "m", messages: msg }).catch((e: unknown) => e)
    expect(e401).toBeInstanceOf(OpenAI.AuthenticationError)
    expect((e401 as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key")
    const e503 = await client.chat.completions.create({ model: "m", messages: msg }).catch((e: unknown) => e)
    expect(e503).toBeInstanceOf(OpenAI.InternalServerError)
    expect((e503 as InstanceType<typeof OpenAI.APIError>).status).toBe(503)
    const e502 = await client.chat.completions.create({ model: "m", messages: msg }).catch((e: unknown) => e)
    expect((e502 as InstanceType<typeof OpenAI.APIError>).status).toBe(502)
    expect(fake.pendingScripts()).toBe(0)
  })

  it("in-stream error and mid-stream drop break the SDK stream", async () => {
    const base = { id: "chatcmpl-x", model: "m" }
    fake.script(
      { kind: "sse", events: [openAiChunk({ role: "assistant", content: "" }, base), openAiChunk({ content: "Hi" }, base), openAiStreamError()] },
      { kind: "sse", events: openAiStream({ ...base, content: ["a", "b", "c"] }).slice(0, 3), thenError: "close" }
    )
    const consume = async (): Promise<string> => {
      let text = ""
      const s = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }], stream: true })
      for await (const c of s) text += c.choices[0]?.delta.content ?? ""
      return text
    }
    const inStream = await consume().catch((e: unknown) => e)
    expect(inStream).toBeInstanceOf(OpenAI.APIError)
    expect(String((inStream as Error).message)).toContain("The server had an error")
    const dropped = await consume().catch((e: unknown) => e)
    expect(dropped).toBeInstanceOf(Error)
  })

  it("sse script frames are written verbatim with delays", async () => {
    fake.script({ kind: "sse", events: openAiStream({ content: ["x", "y"] }), delayMs: 30 })
    const started = Date.now()
    const res = await fetch(`${fake.url}/v1/chat/completions`, { method: "POST", body: "{}" })
    const raw = await res.text()
    expect(Date.now() - started).toBeGreaterThanOrEqual(100)
    expect(raw.endsWith(SSE_DONE)).toBe(true)
  })

  it("script path filters, times and ordering", async () => {
    fake.script(
      { kind: "json", path: "/embeddings", body: { custom: true }, times: 2 },
      { kind: "error", status: 418, method: "GET" }
    )
    const get = await fetch(`${fake.url}/v1/models`)
    expect(get.status).toBe(418)
    const chat = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "q" }] })
    expect(chat.choices[0].message.content).toBe("echo: q")
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${fake.url}/v1/embeddings`, { method: "POST", body: "{}" })
      expect(await r.json()).toEqual({ custom: true })
    }
    expect(fake.pendingScripts()).toBe(0)
    fake.script({ kind: "reply", text: "scripted words here", path: /chat/ })
    const replied = await client.chat.completions.stream({ model: "m", messages: [{ role: "user", content: "q" }] }).finalChatCompletion()
    expect(replied.choices[0].message.content).toBe("scripted words here")
    fake.setDefault({ kind: "error", status: 500 })
    expect((await fetch(`${fake.url}/v1/models`)).status).toBe(500)
    expect((await fetch(`${fake.url}/v1/models`)).status).toBe(500)
    fake.setDefault(undefined)
    expect((await fetch(`${fake.url}/v1/models`)).status).toBe(200)
  })

  it("delay: client timeout is noticed as an early close", async () => {
    fake.script({ kind: "delay", ms: 2000 })
    const err = await client.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "x" }] }, { timeout: 100 })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OpenAI.APIConnectionTimeoutError)
    await fake.waitForClosedEarly(1)
    expect(fake.requests[0].clientClosedEarly).toBe(true)
    // delay then default
    fake.script({ kind: "delay", ms: 20 })
    const ok = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "later" }] })
    expect(ok.choices[0].message.content).toBe("echo: later")
    expect(fake.closedEarly()).toBe(1)
    expect(fake.errors).toEqual([])
  })

  it("hang + abort, drop, and slowStream disconnects", async () => {
    fake.script({ kind: "hang" })
    const ac = new AbortController()
    const pending = client.chat.completions
      .create({ model: "m", messages: [{ role: "user", content: "x" }] }, { signal: ac.signal })
      .catch((e: unknown) => e)
    await fake.waitForRequests(1)
    ac.abort()
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError)
    await fake.waitForClosedEarly(1)

    fake.script({ kind: "drop" })
    const dropped = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(dropped).toBeInstanceOf(OpenAI.APIConnectionError)
    expect(fake.closedEarly()).toBe(1) // server-side drops do not count

    fake.script({ kind: "slowStream", chunks: 50, intervalMs: 20 })
    const stream = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }], stream: true })
    let seen = 0
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) seen++
      if (seen === 2) break
    }
    await fake.waitForClosedEarly(2)
    expect(fake.lastRequest()?.clientClosedEarly).toBe(true)
    expect(fake.errors).toEqual([])
  })

  it("keep-alive: consecutive requests reuse the connection", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const get = () =>
      new Promise<number>((resolve, reject) => {
        httpRequest(`${fake.url}/v1/models`, { agent }, (res) => {
          res.resume()
          res.on("end", () => resolve(res.statusCode ?? 0))
        }).on("error", reject).end()
      })
    for (let i = 0; i < 3; i++) expect(await get()).toBe(200)
    agent.destroy()
    expect(new Set(fake.requests.map((r) => r.remotePort)).size).toBe(1)
  })
})

describe("fake upstream — Azure OpenAI", () => {
  let fake: FakeUpstream
  beforeAll(async () => {
    fake = await startFakeUpstream({ kind: "azure" })
  })
  afterAll(() => fake.close())

  it("serves deployment URLs and echoes the deployment as model", async () => {
    const client = new AzureOpenAI({ endpoint: fake.url, apiKey: "azkey", apiVersion: "2024-10-21", deployment: "my-gpt", maxRetries: 0 })
    const res = await client.chat.completions.create({ model: "", messages: [{ role: "user", content: "az" }] })
    expect(res.model).toBe("my-gpt")
    expect(res.choices[0].message.content).toBe("echo: az")
    const rec = fake.lastRequest()
    expect(rec?.path).toBe("/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21")
    expect(rec?.headers["api-key"]).toBe("azkey")
    const final = await client.chat.completions.stream({ model: "", messages: [{ role: "user", content: "az s" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: az s")
    const emb = await client.embeddings.create({ model: "", input: "e" })
    expect(emb.data[0].embedding).toEqual(fakeEmbedding("e", 32))
  })

  it("requires api-version on classic URLs", async () => {
    const res = await fetch(`${fake.url}/openai/deployments/d/chat/completions`, { method: "POST", body: "{}" })
    expect(res.status).toBe(404)
  })
})

describe("fake upstream — Anthropic wire (@anthropic-ai/sdk v1)", () => {
  let fake: FakeUpstream
  let client: Anthropic
  beforeAll(async () => {
    fake = await startFakeUpstream({ kind: "anthropic" })
    client = new Anthropic({ baseURL: fake.url, apiKey: "test", maxRetries: 0 })
  })
  afterAll(() => fake.close())
  beforeEach(() => fake.reset())

  it("messages non-stream", async () => {
    const msg = await client.messages.create({
      model: "claude-test-1",
      max_tokens: 100,
      system: "terse",
      messages: [{ role: "user", content: [{ type: "text", text: "hello claude" }] }]
    })
    expect(msg.id).toMatch(/^msg_/)
    expect(msg.type).toBe("message")
    expect(msg.model).toBe("claude-test-1")
    expect(msg.content).toEqual([{ type: "text", text: "echo: hello claude" }])
    expect(msg.stop_reason).toBe("end_turn")
    expect(msg.usage).toMatchObject({ output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 })
    const rec = fake.requests[0]
    expect(rec.headers["anthropic-version"]).toBe("2026-10-21")
    // SDK 1.x sends the apiKey as a Bearer token (0.x sent x-api-key).
    expect(rec.headers.authorization).toBe("Bearer test")
    expect(msg.usage.input_tokens).toBe(promptTokensOf(rec.json as Record<string, unknown>))
  })

  it("messages stream: exact event sequence incl. ping; finalMessage", async () => {
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "c", max_tokens: 10, stream: true, messages: [{ role: "user", content: "a b" }] })
    })
    expect(res.headers.get("request-id")).toMatch(/^req_fake/)
    const raw = await res.text()
    const events = [...raw.matchAll(/^event: (\S+)$/gm)].map((m) => m[1])
    expect(events).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    for (const frame of raw.split("\n\n").filter(Boolean)) expect(frame).toMatch(/^event: \S+\ndata: \{.*\}$/)

    const final = await client.messages
      .stream({ model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "stream please" }] })
      .finalMessage()
    expect(final.content).toEqual([{ type: "text", text: "echo: stream please" }])
    expect(final.stop_reason).toBe("end_turn")
    expect(final.usage.output_tokens).toBe(3)
  })

  it("tool use: non-stream and streamed input_json_delta", async () => {
    const params = {
      model: "claude-x",
      max_tokens: 100,
      tools: [weatherToolAnthropic],
      messages: [{ role: "user" as const, content: "Use tool please" }]
    }
    const msg = await client.messages.create(params)
    expect(msg.stop_reason).toBe("tool_use")
    expect(msg.content[0]).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } })
    const final = await client.messages.stream(params).finalMessage()
    expect(final.stop_reason).toBe("tool_use")
    expect(final.content).toHaveLength(1)
    const block = final.content[0]
    expect(block.type).toBe("tool_use")
    expect(block.type === "tool_use" && block.id).toMatch(/^toolu_/)
    expect(block.type === "tool_use" && block.input).toEqual({ city: "Paris" })
    // follow-up turn with a tool_result echoes the result text
    const next = await client.messages.create({
      ...params,
      messages: [
        ...params.messages,
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "18C sunny" }] }
      ]
    })
    expect(next.content).toEqual([{ type: "text", text: "echo: 18C sunny" }])
  })

  it("count_tokens", async () => {
    const body = { model: "claude-x", messages: [{ role: "user" as const, content: "count me" }] }
    const res = await client.messages.countTokens(body)
    expect(res.input_tokens).toBe(promptTokensOf(body))
  })

  it("validation: max_tokens and anthropic-version are required", async () => {
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model: "c", messages: [{ role: "user", content: "x" }] })
    })
    expect(res.status).toBe(400)
    const body = (await res.json()) as { type: string; error: { type: string; message: string }; request_id: string }
    expect(body).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: Field required" } })
    expect(body.request_id).toMatch(/^req_/)
    const noVersion = await fetch(`${fake.url}/v1/messages`, { method: "POST", body: JSON.stringify({ model: "c", max_tokens: 1, messages: [] }) })
    expect(noVersion.status).toBe(400)
  })

  it("error scripts map to Anthropic SDK classes", async () => {
    fake.script(
      { kind: "error", status: 529 },
      { kind: "error", status: 429, headers: { "retry-after": "3" } },
      { kind: "error", status: 400, message: "prompt is too long" }
    )
    const call = () =>
      client.messages.create({ model: "c", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    const overloaded = await call()
    expect(overloaded).toBeInstanceOf(Anthropic.OverloadedError)
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).type).toBe("overloaded_error")
    const limited = await call()
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError)
    expect((limited as InstanceType<typeof Anthropic.APIError>).headers?.get("retry-after")).toBe("3")
    const bad = await call()
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError)
    expect((bad as InstanceType<typeof Anthropic.APIError>).apiMessage).toBe("prompt is too long")
  })

  it("in-stream error event and truncated stream", async () => {
    const frames = anthropicStream({ model: "c", blocks: [{ type: "text", pieces: ["Hel", "lo"] }] })
    fake.script(
      { kind: "sse", events: [...frames.slice(0, 4), anthropicStreamError()] },
      { kind: "sse", events: frames.slice(0, 5), thenError: "close" },
      { kind: "sse", events: [anthropicEvent("message_start", { message: { id: "m", type: "message", role: "assistant", model: "c", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } }), anthropicEvent("message_stop")] }
    )
    const run = () =>
      client.messages.stream({ model: "c", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).finalMessage()
    const e1 = await run().catch((e: unknown) => e)
    expect(e1).toBeInstanceOf(Anthropic.APIError)
    expect((e1 as InstanceType<typeof Anthropic.APIError>).type).toBe("overloaded_error")
    const e2 = await run().catch((e: unknown) => e)
    expect(e2).toBeInstanceOf(Error)
    const empty = await run()
    expect(empty.content).toEqual([])
  })

  it("slowStream in Anthropic format; client abort counted", async () => {
    fake.script({ kind: "slowStream", chunks: 40, intervalMs: 15 })
    const stream = client.messages.stream({ model: "c", max_tokens: 5, messages: [{ role: "user", content: "x" }] })
    let deltas = 0
    for await (const ev of stream) {
      if (ev.type === "content_block_delta") deltas++
      if (deltas === 2) {
        stream.abort()
        break
      }
    }
    await fake.waitForClosedEarly(1)
    expect(fake.errors).toEqual([])
  })

  it("unknown route → 404 in the Anthropic shape", async () => {
    const res = await fetch(`${fake.url}/v1/nope`)
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "not_found_error" } })
  })
})

describe("fake upstream — Cohere rerank and auth", () => {
  let fake: FakeUpstream
  beforeAll(async () => {
    fake = await startFakeUpstream({ kind: "cohere", apiKey: "co-key" })
  })
  afterAll(() => fake.close())

  it("rerank v2 shape, sorted, top_n", async () => {
    const res = await fetch(`${fake.url}/v2/rerank`, {
      method: "POST",
      headers: { authorization: "Bearer co-key", "content-type": "application/json" },
      body: JSON.stringify({
        model: "rerank-v3.5",
        query: "capital of the United States",
        documents: ["Carson City is the capital city of Nevada.", "Washington, D.C. is the capital of the United States.", "bananas"],
        top_n: 2
      })
    })
    const body = (await res.json()) as { id: string; results: Array<{ index: number; relevance_score: number }>; meta: unknown }
    expect(body.results).toHaveLength(2)
    expect(body.results[0].index).toBe(1)
    expect(body.results[0].relevance_score).toBeGreaterThan(body.results[1].relevance_score)
    expect(body.meta).toEqual({ api_version: { version: "2" }, billed_units: { search_units: 1 } })
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("apiKey option rejects wrong keys with 401", async () => {
    const res = await fetch(`${fake.url}/v2/rerank`, { method: "POST", body: "{}" })
    expect(res.status).toBe(401)
  })
})

describe("fake upstream — robustness", () => {
  it("survives clients that vanish mid-upload and raw garbage", async () => {
    const fake = await startFakeUpstream()
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${fake.url}/v1/files`, {
        method: "POST",
        headers: { "content-type": "multipart/form-data; boundary=xyz", "content-length": "100000" }
      })
      req.on("error", () => resolve())
      req.write("--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc")
      setTimeout(() => {
        req.destroy()
        resolve()
      }, 50)
    })
    await fake.waitForClosedEarly(1)
    expect(fake.requests[0].bodyComplete).toBe(false)
    const bad = await fetch(`${fake.url}/v1/chat/completions`, { method: "POST", body: "{not json" })
    expect(bad.status).toBe(400)
    expect(fake.errors).toEqual([])
    await fake.close()
  })
})
