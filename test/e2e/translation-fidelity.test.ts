/**
 * Translation fidelity through the real server, with the official SDKs:
 * a Responses client served by Claude gets its thinking, signed or redacted, as
 * a reasoning item it can send back, and its text, usage and refusals as
 * OpenAI's schema has them; an Anthropic client's `role: "system"` message is served by an
 * OpenAI model, directly or after a fallback from Claude.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicStartMessage } from "../fixtures/sse.ts"
import { schemaProblems } from "../formats/responses-schema.ts"
import { gatewayWithFakes } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      // A compatible server: Responses callers are translated to Chat Completions.
      compat: { kind: "openai", base_url: `${fakes.openai.url}/v1`, models: ["gpt-compat"], credential: "none" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "none" }
    },
    targets: { claude: { model: "claude-e2e" }, gpt: { model: "gpt-compat" } },
    routes: {
      claude_then_gpt: { endpoint: "chat", models: ["claude-then-gpt"], strategy: "fallback", targets: ["claude", "gpt"], retry: { max_retries: 0 } }
    },
    routing: { retry: { max_retries: 0 } }
  })
)
let openai: OpenAI
let anthropic: Anthropic

beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
})

type Json = Record<string, any>

const SIGNATURE = "EqQBCkgIARABGAIiQLe2e"

describe("a Responses client served by Claude", () => {
  it("gets its thinking as a reasoning item and sends it back to Claude as the signed thinking block", async () => {
    fakes.anthropic.script({
      kind: "json",
      body: {
        id: "msg_01e2e",
        type: "message",
        role: "assistant",
        model: "claude-e2e",
        content: [
          { type: "thinking", thinking: "Paris: look it up.", signature: SIGNATURE },
          { type: "tool_use", id: "toolu_e2e", name: "get_weather", input: { city: "Paris" } }
        ],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 12, cache_creation_input_tokens: 300, output_tokens: 20 }
      }
    })
    const tool = { type: "function" as const, name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false }
    const first = await openai.responses.create({ model: "claude-e2e", input: "Weather in Paris?", tools: [tool], reasoning: { effort: "high" } })
    expect(schemaProblems(first)).toEqual([])
    expect(first.reasoning?.effort).toBe("high")
    expect(first.usage?.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 300 })
    expect(first.output[0]).toMatchObject({
      type: "reasoning",
      summary: [{ type: "summary_text", text: "Paris: look it up." }],
      encrypted_content: SIGNATURE
    })

    await openai.responses.create({
      model: "claude-e2e",
      tools: [tool],
      reasoning: { effort: "high" },
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...first.output as Array<OpenAI.Responses.ResponseInputItem>,
        { type: "function_call_output", call_id: "toolu_e2e", output: "sunny" }
      ]
    })
    const sent = fakes.anthropic.requests[1].json as Json
    expect(sent.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Paris: look it up.", signature: SIGNATURE },
        { type: "tool_use", id: "toolu_e2e", name: "get_weather", input: { city: "Paris" } }
      ]
    })
  })
})

describe("a Responses client served by Claude with redacted thinking", () => {
  const DATA = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFB"
  const tool = { type: "function" as const, name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false }

  it("gets it as a reasoning item (streamed) and sends it back to Claude as the same redacted_thinking block", async () => {
    fakes.anthropic.script({
      kind: "sse",
      events: [
        anthropicEvent("message_start", { message: anthropicStartMessage({ id: "msg_01redacted", model: "claude-e2e", blocks: [] }) }),
        anthropicEvent("content_block_start", { index: 0, content_block: { type: "redacted_thinking", data: DATA } }),
        anthropicEvent("content_block_stop", { index: 0 }),
        anthropicEvent("content_block_start", { index: 1, content_block: { type: "tool_use", id: "toolu_r", name: "get_weather", input: {} } }),
        anthropicEvent("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: "{\"city\":\"Paris\"}" } }),
        anthropicEvent("content_block_stop", { index: 1 }),
        anthropicEvent("message_delta", { delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 20 } }),
        anthropicEvent("message_stop")
      ]
    })
    const first = await openai.responses.stream({ model: "claude-e2e", input: "Weather in Paris?", tools: [tool] }).finalResponse()
    expect(schemaProblems(first)).toEqual([])
    expect(first.output[0]).toMatchObject({ type: "reasoning", summary: [], encrypted_content: `redacted_thinking:${DATA}` })

    await openai.responses.create({
      model: "claude-e2e",
      tools: [tool],
      input: [
        { role: "user", content: "Weather in Paris?" },
        ...first.output as Array<OpenAI.Responses.ResponseInputItem>,
        { type: "function_call_output", call_id: "toolu_r", output: "sunny" }
      ]
    })
    expect((fakes.anthropic.requests[1].json as Json).messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "redacted_thinking", data: DATA },
        { type: "tool_use", id: "toolu_r", name: "get_weather", input: { city: "Paris" } }
      ]
    })
  })
})

describe("a Responses client served by a Chat Completions model", () => {
  it("gets the model's refusal as a refusal part of a completed answer, not as text", async () => {
    const refusal = "I can't help with that."
    fakes.openai.script({
      kind: "json",
      body: {
        id: "chatcmpl-e2e",
        object: "chat.completion",
        created: 1,
        model: "gpt-compat",
        choices: [{ index: 0, message: { role: "assistant", content: null, refusal }, logprobs: null, finish_reason: "stop" }],
        usage: { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 }
      }
    })
    const response = await openai.responses.create({ model: "gpt-compat", input: "something bad" })
    expect(schemaProblems(response)).toEqual([])
    expect(response.output[0]).toMatchObject({ type: "message", status: "completed", content: [{ type: "refusal", refusal }] })
    expect(response).toMatchObject({ status: "completed", incomplete_details: null })
    expect(response.output_text).toBe("")
  })
})

describe("an Anthropic client's role: \"system\" message inside messages", () => {
  const request = {
    max_tokens: 50,
    messages: [
      { role: "system", content: "Answer in French." },
      { role: "user", content: "Hello" }
    ]
  } as unknown as Omit<Anthropic.MessageCreateParamsNonStreaming, "model">

  it("is answered by an OpenAI-format model, which gets it as a system message", async () => {
    const message = await anthropic.messages.create({ ...request, model: "gpt-compat" })
    expect(message.content[0]).toMatchObject({ type: "text" })
    expect((fakes.openai.requests[0].json as Json).messages).toEqual([
      { role: "system", content: "Answer in French." },
      { role: "user", content: "Hello" }
    ])
  })

  it("still works after a fallback from Claude to an OpenAI-format model", async () => {
    fakes.anthropic.script({ kind: "error", status: 529 })
    const message = await anthropic.messages.create({ ...request, model: "claude-then-gpt" })
    expect(message.content[0]).toMatchObject({ type: "text" })
    expect(fakes.anthropic.requests).toHaveLength(1)
    // Claude gets the caller's body as sent (same family); only the translated request moves the message.
    expect((fakes.anthropic.requests[0].json as Json).messages[0]).toEqual({ role: "system", content: "Answer in French." })
    expect((fakes.openai.requests[0].json as Json).messages[0]).toEqual({ role: "system", content: "Answer in French." })
  })
})
