import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../../src/domain/chat.ts"
import { Anthropic, OpenAiChat } from "../../src/formats/index.ts"

const { decodeOpenAiChatRequest, encodeOpenAiChatRequest } = OpenAiChat

const decode = (body: Record<string, unknown>): ChatRequest => {
  const result = decodeOpenAiChatRequest({ model: "gpt-x", messages: [{ role: "user", content: "Hi" }], ...body })
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

describe("Chat Completions request encoder", () => {
  const anthropicRequest = (body: Record<string, unknown>): ChatRequest => {
    const result = Anthropic.decodeAnthropicRequest({ model: "claude-x", max_tokens: 300, ...body })
    if (Result.isFailure(result)) throw new Error(result.failure.message)
    return result.success
  }

  it("translates an Anthropic conversation with tools, tool results and images (A→C)", () => {
    const req = anthropicRequest({
      system: [{ type: "text", text: "You are terse." }, { type: "text", text: "Be kind." }],
      stream: true,
      top_k: 5,
      stop_sequences: ["END"],
      metadata: { user_id: "u-9" },
      tools: [{ name: "get_weather", description: "Weather", input_schema: { type: "object", properties: {} } }],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      thinking: { type: "enabled", budget_tokens: 2000 },
      messages: [
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "...", signature: "sig" },
            { type: "text", text: "Let me check." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }
          ]
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_1",
              content: [
                { type: "text", text: "18C" },
                { type: "text", text: "sunny" },
                { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBOR" } }
              ]
            },
            { type: "tool_result", tool_use_id: "toolu_2", content: "timeout", is_error: true },
            { type: "text", text: "And tomorrow?" },
            { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBER" }, title: "f.pdf" }
          ]
        }
      ]
    })
    expect(encodeOpenAiChatRequest(req, { model: "gpt-4o", callerFamily: "anthropic" })).toEqual({
      body: {
        model: "gpt-4o",
        messages: [
          { role: "system", content: "You are terse.\n\nBe kind." },
          { role: "user", content: "Weather in Paris?" },
          {
            role: "assistant",
            content: "Let me check.",
            tool_calls: [
              { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }
            ]
          },
          { role: "tool", tool_call_id: "toolu_1", content: "18C\nsunny" },
          { role: "tool", tool_call_id: "toolu_2", content: "Error: timeout" },
          {
            role: "user",
            content: [
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBOR" } },
              { type: "text", text: "And tomorrow?" },
              { type: "file", file: { filename: "f.pdf", file_data: "data:application/pdf;base64,JVBER" } }
            ]
          }
        ],
        max_tokens: 300,
        stop: ["END"],
        stream: true,
        stream_options: { include_usage: true },
        tools: [{
          type: "function",
          function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} } }
        }],
        tool_choice: "required",
        parallel_tool_calls: false,
        user: "u-9"
      },
      dropped: ["top_k", "thinking", "messages[].thinking"]
    })
  })

  it("sends an assistant turn without text as content null with its tool calls, and without either as empty text", () => {
    const req = anthropicRequest({
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
        { role: "assistant", content: [] }
      ]
    })
    expect(encodeOpenAiChatRequest(req, { model: "m" }).body.messages).toEqual([
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [{ id: "t1", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "assistant", content: "" }
    ])
  })

  it("maps tool_choice tool and none, and leaves tool_choice out when there are no tools", () => {
    const withTools = {
      tools: [{ name: "f", input_schema: { type: "object" } }],
      messages: [{ role: "user", content: "x" }]
    }
    expect(
      encodeOpenAiChatRequest(anthropicRequest({ ...withTools, tool_choice: { type: "tool", name: "f" } }), { model: "m" })
        .body.tool_choice
    ).toEqual({ type: "function", function: { name: "f" } })
    expect(
      encodeOpenAiChatRequest(anthropicRequest({ ...withTools, tool_choice: { type: "none" } }), { model: "m" }).body
        .tool_choice
    ).toBe("none")
    const body = encodeOpenAiChatRequest(
      anthropicRequest({ messages: [{ role: "user", content: "x" }], tool_choice: { type: "auto", disable_parallel_tool_use: true } }),
      { model: "m" }
    ).body
    expect(body).not.toHaveProperty("tool_choice")
    expect(body).not.toHaveProperty("parallel_tool_calls")
  })

  it("keeps at most four stop sequences for an Anthropic caller and reports the cut", () => {
    const req = anthropicRequest({ messages: [{ role: "user", content: "x" }], stop_sequences: ["a", "b", "c", "d", "e"] })
    const encoded = encodeOpenAiChatRequest(req, { model: "m", callerFamily: "anthropic" })
    expect(encoded.body.stop).toEqual(["a", "b", "c", "d"])
    expect(encoded.dropped).toEqual(["stop_sequences"])
  })

  it("encodes response_format json_schema in OpenAI's shape", () => {
    const req = decode({ response_format: { type: "json_schema", json_schema: { name: "w", schema: { type: "object" }, strict: true } } })
    expect(encodeOpenAiChatRequest(req, { model: "m" }).body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "w", schema: { type: "object" }, strict: true }
    })
  })

  it("reports a URL document as dropped (a file part needs inline data)", () => {
    const req = anthropicRequest({
      messages: [{ role: "user", content: [{ type: "document", source: { type: "url", url: "https://x/a.pdf" } }, { type: "text", text: "sum" }] }]
    })
    const encoded = encodeOpenAiChatRequest(req, { model: "m" })
    expect(encoded.body.messages).toEqual([{ role: "user", content: "sum" }])
    expect(encoded.dropped).toEqual(["messages[].document.url"])
  })

  it("passes unmapped fields through for an OpenAI caller and still reports content notes", () => {
    const req = decode({
      seed: 7,
      logprobs: true,
      messages: [{ role: "user", name: "ann", content: [{ type: "text", text: "x" }] }]
    })
    const encoded = encodeOpenAiChatRequest(req, { model: "gpt-4o", callerFamily: "openai" })
    expect(encoded.body).toMatchObject({ seed: 7, logprobs: true })
    expect(encoded.dropped).toEqual(["messages[].name"])
  })

  it("puts the output limit in the field the provider wants, and reasoning effort in reasoning_effort", () => {
    const req = decode({ max_tokens: 300, reasoning_effort: "high", messages: [{ role: "user", content: "x" }] })
    expect(encodeOpenAiChatRequest(req, { model: "o4-mini", maxTokensField: "max_completion_tokens" }).body).toMatchObject({
      max_completion_tokens: 300,
      reasoning_effort: "high"
    })
    expect(encodeOpenAiChatRequest(req, { model: "llama" }).body).toMatchObject({ max_tokens: 300 })
    expect(encodeOpenAiChatRequest(req, { model: "llama" }).body.max_completion_tokens).toBeUndefined()
  })

  it("round-trips a Chat request through the canonical model for an OpenAI caller", () => {
    const body = {
      model: "gpt-4o",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "w", arguments: "{\"c\":\"P\"}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
        { role: "user", content: [{ type: "text", text: "Thanks" }, { type: "image_url", image_url: { url: "https://x/y.png" } }] }
      ],
      max_tokens: 50,
      temperature: 0.3,
      stop: ["END"],
      tools: [{ type: "function", function: { name: "w", description: "weather", parameters: { type: "object" }, strict: true } }],
      tool_choice: "auto",
      parallel_tool_calls: true,
      response_format: { type: "text" },
      user: "u",
      seed: 1
    }
    const req = decodeOpenAiChatRequest(body)
    if (Result.isFailure(req)) throw new Error(req.failure.message)
    expect(encodeOpenAiChatRequest(req.success, { model: "gpt-4o", callerFamily: "openai" })).toEqual({ body, dropped: [] })
  })
})
