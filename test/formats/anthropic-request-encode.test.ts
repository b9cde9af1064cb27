import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../../src/domain/chat.ts"
import { Anthropic, OpenAiChat } from "../../src/formats/index.ts"

const { decodeAnthropicRequest, encodeAnthropicRequest, unsupportedResponseFormat } = Anthropic

const decode = (body: Record<string, unknown>): ChatRequest => {
  const result = decodeAnthropicRequest({
    model: "claude-x",
    max_tokens: 256,
    messages: [{ role: "user", content: "Hi" }],
    ...body
  })
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const fromOpenAi = (body: Record<string, unknown>): ChatRequest => {
  const result = OpenAiChat.decodeOpenAiChatRequest({ model: "gpt-x", ...body })
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const base: ChatRequest = {
  model: "m",
  system: [],
  messages: [],
  stream: false,
  includeUsage: false,
  unmapped: {},
  untranslatable: []
}

const encodeMessages = (messages: ChatRequest["messages"]) =>
  encodeAnthropicRequest({ ...base, messages }, { model: "claude-x" }).body.messages

describe("Messages request encoder", () => {
  it("translates the docs/reference/translation.md §2 worked example exactly (C→A)", () => {
    const req = fromOpenAi({
      model: "claude-sonnet-4-5",
      max_tokens: 512,
      stop: "END",
      user: "u-123",
      tool_choice: "auto",
      parallel_tool_calls: false,
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          }
        },
        {
          type: "function",
          function: {
            name: "get_time",
            description: "Local time",
            parameters: { type: "object", properties: { tz: { type: "string" } } }
          }
        }
      ],
      messages: [
        { role: "system", content: "You are terse." },
        { role: "developer", content: "Answer in English." },
        { role: "user", content: "Weather and time in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_W1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } },
            { id: "call_T2", type: "function", function: { name: "get_time", arguments: "{\"tz\":\"Europe/Paris\"}" } }
          ]
        },
        { role: "tool", tool_call_id: "call_W1", content: "18C, sunny" },
        { role: "tool", tool_call_id: "call_T2", content: "14:05" },
        { role: "user", content: "Summarize in one line." }
      ]
    })
    expect(encodeAnthropicRequest(req, { model: "claude-sonnet-4-5", callerFamily: "openai" })).toEqual({
      body: {
        model: "claude-sonnet-4-5",
        max_tokens: 512,
        stop_sequences: ["END"],
        metadata: { user_id: "u-123" },
        tool_choice: { type: "auto", disable_parallel_tool_use: true },
        tools: [
          {
            name: "get_weather",
            input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          },
          { name: "get_time", description: "Local time", input_schema: { type: "object", properties: { tz: { type: "string" } } } }
        ],
        system: [{ type: "text", text: "You are terse." }, { type: "text", text: "Answer in English." }],
        messages: [
          { role: "user", content: [{ type: "text", text: "Weather and time in Paris?" }] },
          {
            role: "assistant",
            content: [
              { type: "tool_use", id: "call_W1", name: "get_weather", input: { city: "Paris" } },
              { type: "tool_use", id: "call_T2", name: "get_time", input: { tz: "Europe/Paris" } }
            ]
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "call_W1", content: "18C, sunny" },
              { type: "tool_result", tool_use_id: "call_T2", content: "14:05" },
              { type: "text", text: "Summarize in one line." }
            ]
          }
        ]
      },
      dropped: []
    })
  })

  it("uses max_tokens from the request, else the configured default, else 4096", () => {
    const req = { ...base, messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "x" }] }] }
    expect(encodeAnthropicRequest({ ...req, maxTokens: 77 }, { model: "c", defaultMaxTokens: 1000 }).body.max_tokens).toBe(
      77
    )
    expect(encodeAnthropicRequest(req, { model: "c", defaultMaxTokens: 1000 }).body.max_tokens).toBe(1000)
    expect(encodeAnthropicRequest(req, { model: "c" }).body.max_tokens).toBe(4096)
  })

  it("reports the Chat fields Messages cannot carry as dropped", () => {
    const req = fromOpenAi({
      messages: [{ role: "user", content: "x" }],
      seed: 7,
      logprobs: true,
      n: 3,
      frequency_penalty: 0.2,
      tools: [{ type: "function", function: { name: "f", strict: true } }]
    })
    expect(encodeAnthropicRequest(req, { model: "c", callerFamily: "openai" }).dropped).toEqual([
      "tools[].function.strict",
      "seed",
      "logprobs",
      "n",
      "frequency_penalty"
    ])
  })

  it("passes unmapped fields through for an Anthropic caller but reports dropped content", () => {
    const req = decode({
      thinking: { type: "enabled", budget_tokens: 2048 },
      messages: [
        { role: "user", content: "q" },
        { role: "assistant", content: [{ type: "thinking", thinking: "..", signature: "s" }, { type: "text", text: "a" }] },
        { role: "user", content: "more" }
      ]
    })
    const encoded = encodeAnthropicRequest(req, { model: "c", callerFamily: "anthropic" })
    expect(encoded.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 })
    expect(encoded.dropped).toEqual(["messages[].thinking"])
  })

  it("cleans tool ids the same way on the tool_use and the tool_result", () => {
    expect(
      encodeMessages([
        { role: "user", content: [{ type: "text", text: "go" }] },
        { role: "assistant", content: [{ type: "tool_call", id: "functions.Bash:0", name: "Bash", arguments: "{}" }] },
        {
          role: "user",
          content: [{ type: "tool_result", toolCallId: "functions.Bash:0", content: [{ type: "text", text: "ok" }] }]
        }
      ])
    ).toEqual([
      { role: "user", content: [{ type: "text", text: "go" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "functions_Bash_0", name: "Bash", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "functions_Bash_0", content: "ok" }] }
    ])
  })

  it("merges consecutive same-role messages and puts tool results first in a user message", () => {
    expect(
      encodeMessages([
        { role: "user", content: [{ type: "text", text: "a" }] },
        { role: "user", content: [{ type: "text", text: "b" }] },
        { role: "assistant", content: [{ type: "tool_call", id: "t1", name: "f", arguments: "{}" }] },
        { role: "assistant", content: [{ type: "text", text: "" }] },
        {
          role: "user",
          content: [
            { type: "text", text: "note" },
            { type: "tool_result", toolCallId: "t1", content: [], isError: true }
          ]
        }
      ])
    ).toEqual([
      { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", is_error: true }, { type: "text", text: "note" }] }
    ])
  })

  it("skips empty and whitespace-only text blocks", () => {
    expect(
      encodeMessages([
        { role: "user", content: [{ type: "text", text: "" }, { type: "text", text: "  " }, { type: "text", text: "x" }] }
      ])
    ).toEqual([{ role: "user", content: [{ type: "text", text: "x" }] }])
  })

  it("adds a minimal user turn before a leading assistant message", () => {
    expect(encodeMessages([{ role: "assistant", content: [{ type: "text", text: "Hello" }] }, {
      role: "user",
      content: [{ type: "text", text: "Hi" }]
    }])).toEqual([
      { role: "user", content: [{ type: "text", text: "." }] },
      { role: "assistant", content: [{ type: "text", text: "Hello" }] },
      { role: "user", content: [{ type: "text", text: "Hi" }] }
    ])
  })

  it("trims trailing whitespace from a final assistant message (prefill)", () => {
    expect(
      encodeMessages([
        { role: "user", content: [{ type: "text", text: "Say hi " }] },
        { role: "assistant", content: [{ type: "text", text: "Hi, \n" }] }
      ])
    ).toEqual([
      { role: "user", content: [{ type: "text", text: "Say hi " }] },
      { role: "assistant", content: [{ type: "text", text: "Hi," }] }
    ])
  })

  it("sends {} for empty, invalid or non-object tool-call arguments", () => {
    const call = (args: string) =>
      (encodeMessages([
        { role: "user", content: [{ type: "text", text: "go" }] },
        { role: "assistant", content: [{ type: "tool_call", id: "t", name: "f", arguments: args }] }
      ]) as Array<{ content: Array<{ input: unknown }> }>)[1].content[0].input
    expect(call("")).toEqual({})
    expect(call("{\"a\":")).toEqual({})
    expect(call("[1,2]")).toEqual({})
    expect(call("{\"a\":1}")).toEqual({ a: 1 })
  })

  it("encodes images and documents as base64 or url sources", () => {
    expect(
      encodeMessages([{
        role: "user",
        content: [
          { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBOR" } },
          { type: "image", source: { kind: "url", url: "https://x/cat.png" } },
          { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBER" }, title: "a.pdf" }
        ]
      }])
    ).toEqual([{
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBOR" } },
        { type: "image", source: { type: "url", url: "https://x/cat.png" } },
        { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBER" }, title: "a.pdf" }
      ]
    }])
  })

  it("clamps temperature to [0, 1], drops blank stop sequences and defaults a missing input schema", () => {
    const body = encodeAnthropicRequest({
      ...base,
      temperature: 1.6,
      stop: ["END", " ", ""],
      tools: [{ name: "noop", parameters: {} }],
      toolChoice: { type: "required" },
      stream: true
    }, { model: "c" }).body
    expect(body).toMatchObject({
      temperature: 1,
      stop_sequences: ["END"],
      tools: [{ name: "noop", input_schema: { type: "object", properties: {} } }],
      tool_choice: { type: "any" },
      stream: true
    })
  })

  it("maps tool_choice tool and none, and never adds disable_parallel_tool_use to none", () => {
    const tools = [{ name: "f", parameters: { type: "object" } }]
    const choice = (toolChoice: ChatRequest["toolChoice"], parallelToolCalls?: boolean) =>
      encodeAnthropicRequest({ ...base, tools, toolChoice, parallelToolCalls }, { model: "c" }).body.tool_choice
    expect(choice({ type: "tool", name: "f" }, false)).toEqual({
      type: "tool",
      name: "f",
      disable_parallel_tool_use: true
    })
    expect(choice({ type: "none" }, false)).toEqual({ type: "none" })
    expect(choice(undefined, true)).toBeUndefined()
    expect(encodeAnthropicRequest({ ...base, toolChoice: { type: "auto" } }, { model: "c" }).body).not.toHaveProperty(
      "tool_choice"
    )
  })

  it("flags JSON response formats as unsupported and reports one that slipped through as dropped", () => {
    expect(unsupportedResponseFormat({ ...base, responseFormat: { type: "json_object" } })).toBe(true)
    expect(
      unsupportedResponseFormat({ ...base, responseFormat: { type: "json_schema", name: "w", schema: {} } })
    ).toBe(true)
    expect(unsupportedResponseFormat({ ...base, responseFormat: { type: "text" } })).toBe(false)
    expect(unsupportedResponseFormat(base)).toBe(false)
    expect(encodeAnthropicRequest({ ...base, responseFormat: { type: "json_object" } }, { model: "c" }).dropped).toEqual([
      "response_format"
    ])
  })
})
