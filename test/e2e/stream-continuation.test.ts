/**
 * `on_stream_break = "continue"` end to end: a committed stream that breaks
 * (the connection reset, an upstream error event) is continued on the next
 * target behind the same caller stream; the official SDKs' streaming helpers
 * see the whole text exactly once and no error, in every caller × provider
 * pair (fast and normalized path, and the Responses API). Without it, or
 * inside a tool call, the caller gets today's error frame.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CONTINUE_PROMPT } from "../../src/pipeline/chat/continuation.ts"
import {
  anthropicEvent,
  anthropicStartMessage,
  anthropicStream,
  anthropicStreamError,
  openAiStream,
  sseEvent
} from "../fixtures/fake-upstream.ts"
import { Redis } from "ioredis"
import { gatewayWithFakes, startGateway, waitForRequestLogs } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const retry = { max_retries: 0, backoff_base_ms: 1 }
const route = (models: string, targets: Array<string>, extra: Record<string, unknown> = { on_stream_break: "continue" }) => ({
  endpoint: "chat",
  models: [models],
  strategy: "fallback",
  targets,
  retry,
  ...extra
})

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "gpt-4o-mini"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5", "claude-haiku-4-5"], credential: "env::ANTHROPIC_KEY" }
    },
    // Prices far apart, so a continuation priced at the wrong model shows.
    models: {
      "claude-sonnet-4-5": { input_per_mtok: 100, output_per_mtok: 0 },
      "gpt-4o": { input_per_mtok: 1, output_per_mtok: 1000 }
    },
    targets: {
      gpt: { model: "gpt-4o" },
      mini: { model: "gpt-4o-mini" },
      claude: { model: "claude-sonnet-4-5" },
      haiku: { model: "claude-haiku-4-5" },
      // The target's own setting wins over its route's.
      gpt_errors: { model: "gpt-4o", on_stream_break: "error" }
    },
    routes: {
      oo: route("oo", ["gpt", "mini"]),
      aa: route("aa", ["claude", "haiku"]),
      ao: route("ao", ["claude", "gpt"]),
      oa: route("oa", ["gpt", "claude"]),
      plain: route("plain", ["gpt", "claude"], {}),
      pinned: route("pinned", ["gpt_errors", "claude"]),
      alone: route("alone", ["gpt"])
    }
  }),
  { OPENAI_KEY: "sk-openai-continue", ANTHROPIC_KEY: "sk-ant-continue" }
)

let openai: OpenAI
let anthropic: Anthropic
beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
})

const BEFORE = ["The quick ", "brown "]
const AFTER = ["fox jumps ", "over the dog."]
const WHOLE = "The quick brown fox jumps over the dog."

/** An OpenAI stream of `BEFORE`, then the connection reset (no finish). */
const openAiBreaks = () => fakes.openai.script({ kind: "sse", events: openAiStream({ content: BEFORE, done: false }).slice(0, -1), thenError: "close" })
/** An Anthropic stream of `BEFORE`, then the connection reset. */
const anthropicBreaks = () => fakes.anthropic.script({ kind: "sse", events: anthropicStream({ blocks: [{ type: "text", pieces: BEFORE }] }).slice(0, -3), thenError: "close" })
/** An Anthropic stream of `BEFORE`, then an `overloaded_error` event. */
const anthropicErrorEvent = () =>
  fakes.anthropic.script({ kind: "sse", events: [...anthropicStream({ blocks: [{ type: "text", pieces: BEFORE }] }).slice(0, -3), anthropicStreamError()] })
const openAiContinues = (pieces = AFTER, usage?: object) => fakes.openai.script({ kind: "sse", events: openAiStream({ content: pieces, ...(usage ? { usage } : {}) }) })
const anthropicContinues = (pieces = AFTER) =>
  fakes.anthropic.script({ kind: "sse", events: anthropicStream({ blocks: [{ type: "text", pieces }], usage: { input_tokens: 20, output_tokens: 4 } }) })

/** A Responses stream (OpenAI's `/responses`) of `pieces` in one message, then the connection reset. */
const responsesBreaks = (id: string, pieces: ReadonlyArray<string>) => {
  const pending = { id, object: "response", created_at: 0, status: "in_progress", model: "gpt-4o", output: [], usage: null }
  const item = { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] }
  fakes.openai.script({
    kind: "sse",
    path: "/responses",
    events: [
      sseEvent("response.created", { type: "response.created", sequence_number: 0, response: pending }),
      sseEvent("response.in_progress", { type: "response.in_progress", sequence_number: 1, response: pending }),
      sseEvent("response.output_item.added", { type: "response.output_item.added", sequence_number: 2, output_index: 0, item }),
      sseEvent("response.content_part.added", {
        type: "response.content_part.added",
        sequence_number: 3,
        item_id: "msg_1",
        output_index: 0,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] }
      }),
      ...pieces.map((delta, i) =>
        sseEvent("response.output_text.delta", {
          type: "response.output_text.delta",
          sequence_number: 4 + i,
          item_id: "msg_1",
          output_index: 0,
          content_index: 0,
          delta,
          logprobs: []
        })
      )
    ],
    thenError: "close"
  })
}

const messagesOf = (json: unknown) => (json as { messages: Array<{ role: string; content: unknown }> }).messages

/** The request line of the last request. */
const lastRequest = async () => (await waitForRequestLogs(gateway, 1)).at(-1)!

describe("a broken stream is continued on the next target", () => {
  it("OpenAI caller → OpenAI (fast path): reset mid-answer, continued on the next OpenAI target with the continuation message", async () => {
    openAiBreaks()
    openAiContinues()
    const stream = openai.chat.completions.stream({ model: "oo", messages: [{ role: "user", content: "tell me" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe(WHOLE)
    expect(final.choices[0].finish_reason).toBe("stop")
    expect(final.id).toBe("chatcmpl-fake")
    // No prefill in Chat Completions: the text sent, then the documented continuation message.
    const second = fakes.openai.requests[1]
    expect((second.json as { model: string }).model).toBe("gpt-4o-mini")
    expect(messagesOf(second.json).slice(-2)).toEqual([
      { role: "assistant", content: "The quick brown " },
      { role: "user", content: CONTINUE_PROMPT }
    ])
    const request = await lastRequest()
    expect(request).toMatchObject({ status: 200, continued: "ok", continued_on: "openai", path_kind: "fast", finish_reason: "stop" })
    expect(request.error_code).toBeUndefined()
    const continuation = gateway.logs.find((line) => line.msg === "continuation" && line.request_id === request.request_id)
    expect(continuation).toMatchObject({ target: "mini", outcome: "continued" })
  })

  it("Anthropic caller → Anthropic (fast path): an error event mid-answer, continued with the text as an assistant prefill", async () => {
    anthropicErrorEvent()
    anthropicContinues()
    const stream = anthropic.messages.stream({ model: "aa", max_tokens: 64, messages: [{ role: "user", content: "tell me" }] })
    const final = await stream.finalMessage()
    expect(final.content).toHaveLength(1)
    expect(final.content[0]).toMatchObject({ type: "text", text: WHOLE })
    expect(final.stop_reason).toBe("end_turn")
    expect(final.id).toBe("msg_fake")
    // Prefill without its trailing whitespace (Anthropic refuses it); the space is not sent twice.
    const second = fakes.anthropic.requests[1]
    expect(messagesOf(second.json).at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "The quick brown" }] })
    // Usage over both calls: 10 + 20 input tokens (the first call's message_start, the continuation's).
    expect(final.usage.input_tokens).toBe(30)
  })

  it("each upstream call of a continued stream is priced at its own model: the broken Anthropic call's input at Claude's price, the OpenAI continuation's at GPT's", async () => {
    anthropicBreaks()
    openAiContinues(AFTER, { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 })
    const final = await openai.chat.completions.stream({ model: "ao", messages: [{ role: "user", content: "tell me" }], stream_options: { include_usage: true } }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe(WHOLE)
    // Claude: its message_start's 10 input tokens at $100/Mtok; GPT: 12 input at $1/Mtok and 4 output at $1000/Mtok.
    const cost = 10 * 100e-6 + 12 * 1e-6 + 4 * 1000e-6
    expect((await lastRequest()).cost_usd).toBeCloseTo(cost, 9)
  })

  it("OpenAI caller → Anthropic provider (normalized): reset, continued on OpenAI", async () => {
    anthropicBreaks()
    openAiContinues()
    const final = await openai.chat.completions.stream({ model: "ao", messages: [{ role: "user", content: "tell me" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe(WHOLE)
    expect(final.id).toBe("chatcmpl-msg_fake")
    expect(await lastRequest()).toMatchObject({ status: 200, continued: "ok", continued_on: "openai", path_kind: "normalized" })
  })

  it("Anthropic caller → OpenAI provider (normalized): reset, continued on Anthropic; a continuation that starts over is trimmed", async () => {
    openAiBreaks()
    // The continuation repeats the text already sent before going on.
    anthropicContinues(["The quick brown ", ...AFTER])
    const final = await anthropic.messages.stream({ model: "oa", max_tokens: 64, messages: [{ role: "user", content: "tell me" }] }).finalMessage()
    expect(final.content).toEqual([expect.objectContaining({ type: "text", text: WHOLE })])
    expect(final.stop_reason).toBe("end_turn")
  })

  it("a continuation may call a tool: the text before the break, then the tool call, complete", async () => {
    anthropicBreaks()
    fakes.openai.script({ kind: "sse", events: openAiStream({ toolCalls: [{ id: "call_1", name: "get_weather", argumentPieces: ["{\"city\":", "\"Paris\"}"] }] }) })
    const final = await openai.chat.completions.stream({
      model: "ao",
      messages: [{ role: "user", content: "weather" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]
    }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("The quick brown ")
    expect(final.choices[0].message.tool_calls).toEqual([
      expect.objectContaining({ id: "call_1", function: expect.objectContaining({ name: "get_weather", arguments: "{\"city\":\"Paris\"}" }) })
    ])
    expect(final.choices[0].finish_reason).toBe("tool_calls")
  })

  it("Responses caller: a Responses stream reset mid-answer is continued on the next target (chat completions)", async () => {
    responsesBreaks("resp_cont", BEFORE)
    openAiContinues()
    const final = await openai.responses.stream({ model: "oo", input: "tell me" }).finalResponse()
    expect(final.output_text).toBe(WHOLE)
    expect(final.id).toBe("resp_cont")
    expect(fakes.openai.requests.map((request) => request.pathname)).toEqual(["/v1/responses", "/v1/chat/completions"])
  })
})

describe("the seam on the wire", () => {
  const raw = async (path: string, body: object) => {
    const response = await fetch(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    return response.text()
  }
  const count = (text: string, needle: string) => text.split(needle).length - 1

  it("OpenAI: one role chunk, one finish, one [DONE], every chunk with the first upstream's id, usage summed", async () => {
    openAiBreaks()
    openAiContinues(AFTER, { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 })
    const text = await raw("/v1/chat/completions", { model: "oo", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "tell me" }] })
    const chunks = text.split("\n\n").filter((frame) => frame.startsWith("data: {")).map((frame) => JSON.parse(frame.slice(6)))
    expect(new Set(chunks.map((chunk) => chunk.id))).toEqual(new Set(["chatcmpl-fake"]))
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta?.role === "assistant")).toHaveLength(1)
    expect(chunks.filter((chunk) => chunk.choices[0]?.finish_reason === "stop")).toHaveLength(1)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("")).toBe(WHOLE)
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 4 })
    expect(count(text, "[DONE]")).toBe(1)
    expect(text).not.toContain("error")
  })

  it("Responses, a break after many events: the continuation's sequence numbers go on from the last the caller saw", async () => {
    // 300 deltas forwarded verbatim before the break: what the continuation writes follows all of them.
    const pieces = Array.from({ length: 300 }, (_, i) => `w${i} `)
    responsesBreaks("resp_many", pieces)
    openAiContinues()
    const text = await raw("/v1/responses", { model: "oo", stream: true, input: "tell me" })
    const events = text.split("\n\n").filter((frame) => frame.includes("data: {")).map((frame) => JSON.parse(frame.split("data: ")[1]))
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i))
    expect(events.filter((event) => event.type === "response.output_item.added")).toHaveLength(1)
    const completed = events.at(-1)
    expect(completed.type).toBe("response.completed")
    expect(completed.response.id).toBe("resp_many")
    expect(completed.response.output[0].content[0].text).toBe(pieces.join("") + AFTER.join(""))
  })

  it("Anthropic: one message_start, the text in one block (index 0), one message_delta and message_stop", async () => {
    anthropicBreaks()
    anthropicContinues()
    const text = await raw("/v1/messages", { model: "aa", stream: true, max_tokens: 64, messages: [{ role: "user", content: "tell me" }] })
    expect(count(text, "event: message_start")).toBe(1)
    expect(count(text, "event: content_block_start")).toBe(1)
    expect(count(text, "event: message_delta")).toBe(1)
    expect(count(text, "event: message_stop")).toBe(1)
    expect(text).not.toContain("event: error")
    const deltas = text.split("\n\n").filter((frame) => frame.startsWith("event: content_block_delta")).map((frame) => JSON.parse(frame.split("data: ")[1]))
    expect(new Set(deltas.map((delta) => delta.index))).toEqual(new Set([0]))
    expect(deltas.map((delta) => delta.delta.text).join("")).toBe(WHOLE)
  })
})

describe("what is not continued ends with the error frame, as before", () => {
  /** The helper sees the stream's error; the log line says it failed, not continued. */
  const endsWithError = async (stream: { finalChatCompletion: () => Promise<unknown> }) => {
    await expect(stream.finalChatCompletion()).rejects.toThrow()
    const request = await lastRequest()
    expect(request.continued).toBeUndefined()
    expect(request.error_code).toBe("upstream")
  }

  it("without on_stream_break the helper sees the stream's error", async () => {
    openAiBreaks()
    await endsWithError(openai.chat.completions.stream({ model: "plain", messages: [{ role: "user", content: "tell me" }] }))
    expect(fakes.anthropic.requests).toHaveLength(0)
  })

  it("a target's on_stream_break = \"error\" wins over its route's \"continue\"", async () => {
    openAiBreaks()
    await expect(openai.chat.completions.stream({ model: "pinned", messages: [{ role: "user", content: "tell me" }] }).finalChatCompletion()).rejects.toThrow()
    expect(fakes.anthropic.requests).toHaveLength(0)
  })

  it("a break inside a tool call's arguments is not continued", async () => {
    const frames = openAiStream({ toolCalls: [{ id: "call_1", name: "get_weather", argumentPieces: ["{\"city\":", "\"Par"] }], done: false })
    fakes.openai.script({ kind: "sse", events: frames.slice(0, -1), thenError: "close" })
    await expect(
      openai.chat.completions.stream({
        model: "oo",
        messages: [{ role: "user", content: "weather" }],
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]
      }).finalChatCompletion()
    ).rejects.toThrow()
    expect(fakes.openai.requests).toHaveLength(1)
  })

  it("a request the other targets cannot be asked (a field no other family carries) is not continued", async () => {
    openAiBreaks()
    await endsWithError(openai.chat.completions.stream({ model: "oo", web_search_options: {}, messages: [{ role: "user", content: "tell me" }] }))
    expect(fakes.openai.requests).toHaveLength(1)
  })

  it("a break after the finish (the connection reset before [DONE]) is not continued", async () => {
    fakes.openai.script({ kind: "sse", events: openAiStream({ content: BEFORE, done: false }), thenError: "close" })
    const text = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "oo", stream: true, messages: [{ role: "user", content: "tell me" }] })
    }).then((response) => response.text())
    expect(text).toContain("\"finish_reason\":\"stop\"")
    expect(text).not.toContain("[DONE]")
    expect(fakes.openai.requests).toHaveLength(1)
    expect((await lastRequest()).continued).toBeUndefined()
  })

  it("with no other target the stream ends with the error frame", async () => {
    openAiBreaks()
    await expect(openai.chat.completions.stream({ model: "alone", messages: [{ role: "user", content: "tell me" }] }).finalChatCompletion()).rejects.toThrow()
    expect(fakes.openai.requests).toHaveLength(1)
  })

  it("a continuation that fails too ends with the error frame, once, and the log line says so", async () => {
    anthropicBreaks()
    fakes.openai.script({ kind: "error", status: 503 })
    const stream = anthropic.messages.stream({ model: "ao", max_tokens: 64, messages: [{ role: "user", content: "tell me" }] })
    await expect(stream.finalMessage()).rejects.toThrow()
    const request = await lastRequest()
    expect(request).toMatchObject({ continued: "failed", error_code: "upstream" })
  })
})

describe("a continued stream elsewhere in the pipeline", () => {
  it("the canonical preamble alone is not a break worth continuing: a reset before content fails over as before", async () => {
    fakes.anthropic.script({
      kind: "sse",
      events: [anthropicEvent("message_start", { message: anthropicStartMessage({ blocks: [] }) })],
      thenError: "close"
    })
    const final = await anthropic.messages.stream({ model: "ao", max_tokens: 64, messages: [{ role: "user", content: "fresh" }] }).finalMessage()
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: fresh" })
    expect((await lastRequest()).continued).toBeUndefined()
  })
})

describe("with the cache and the output guardrail", () => {
  // A database of its own, emptied before and after.
  const REDIS_URL = `${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/9`
  let redis: Redis
  let guarded: RunningGateway
  beforeAll(async () => {
    redis = new Redis(REDIS_URL)
    await redis.flushdb()
    guarded = await startGateway({
      providers: {
        openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "gpt-4o-mini"], credential: "none" },
        anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "none" }
      },
      targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-sonnet-4-5" } },
      routes: { smart: route("smart", ["gpt", "claude"]) },
      security: { enabled: true, output_guardrails: true, blocklist: ["forbidden-word"] },
      cache: { enabled: true, url: REDIS_URL, encrypt_salt: "continuation-salt", default_mode: "always" }
    })
  })
  afterAll(async () => {
    await guarded?.close()
    await redis.flushdb()
    redis.disconnect()
  })
  const client = () => new OpenAI({ baseURL: `${guarded.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })

  it("a continued stream is cached whole, as one answer: the same request is a hit with the whole text", async () => {
    openAiBreaks()
    anthropicContinues()
    const request = { model: "smart", messages: [{ role: "user" as const, content: "cache the whole of it" }] }
    const first = await client().chat.completions.stream(request).finalChatCompletion()
    expect(first.choices[0].message.content).toBe(WHOLE)
    const deadline = Date.now() + 3000
    while ((await redis.keys("gw:cache:v1:*")).length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    const again = await client().chat.completions.stream(request).finalChatCompletion()
    expect(again.choices[0].message.content).toBe(WHOLE)
    expect(fakes.openai.requests).toHaveLength(1)
    expect(fakes.anthropic.requests).toHaveLength(1)
    const logs = await waitForRequestLogs(guarded, 2)
    expect(logs.at(-2)).toMatchObject({ cache: "miss", continued: "ok", continued_on: "anthropic" })
    // TTFT is the answer's first token, from the first attempt: there is one.
    expect(logs.at(-2)!.ttft_ms).toBeGreaterThan(0)
    expect(logs.at(-1)).toMatchObject({ cache: "hit" })
  })

  it("the output guardrail reads the whole answer, across the seam", async () => {
    fakes.openai.script({ kind: "sse", events: openAiStream({ content: ["the forbid"], done: false }).slice(0, -1), thenError: "close" })
    anthropicContinues(["den-word, then more"])
    const final = await client().chat.completions.stream({ model: "smart", messages: [{ role: "user", content: "say it" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("the forbidden-word, then more")
    const logs = await waitForRequestLogs(guarded, 3)
    expect(logs.at(-1)).toMatchObject({ continued: "ok", guardrail_output: "blocklist" })
  })
})

describe("with the Responses API's store", () => {
  const REDIS_URL = `${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/9`
  let stored: RunningGateway
  beforeAll(async () => {
    stored = await startGateway({
      providers: { openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "gpt-4o-mini"], credential: "none" } },
      targets: { gpt: { model: "gpt-4o" }, mini: { model: "gpt-4o-mini" } },
      routes: { oo: route("oo", ["gpt", "mini"]) },
      cache: { enabled: false, url: REDIS_URL, encrypt_salt: "continuation-store-salt" },
      responses: { enabled: true }
    })
  })
  afterAll(async () => {
    await stored?.close()
  })

  it("a continued stream is stored whole: the stored response has the text from both sides of the seam", async () => {
    responsesBreaks("resp_stored", BEFORE)
    openAiContinues()
    const client = new OpenAI({ baseURL: `${stored.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
    const final = await client.responses.stream({ model: "oo", input: "keep it" }).finalResponse()
    expect(final.output_text).toBe(WHOLE)
    const logs = await waitForRequestLogs(stored, 1)
    expect(logs.at(-1)).toMatchObject({ continued: "ok", responses_store: "stored" })
    expect((await client.responses.retrieve(final.id)).output_text).toBe(WHOLE)
  })
})
