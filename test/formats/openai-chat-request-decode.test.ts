import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../../src/domain/chat.ts"
import { OpenAiChat } from "../../src/formats/index.ts"

const { decodeOpenAiChatRequest } = OpenAiChat

const decode = (body: Record<string, unknown>): ChatRequest => {
  const result = decodeOpenAiChatRequest({ model: "gpt-x", messages: [{ role: "user", content: "Hi" }], ...body })
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const failure = (body: unknown) => {
  const result = decodeOpenAiChatRequest(body)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return result.failure
}

describe("Chat Completions request decoder", () => {
  it("moves system and developer messages, wherever they are, into system in order", () => {
    const req = decode({
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Hi" },
        { role: "developer", content: [{ type: "text", text: "Answer in English." }, { type: "text", text: "No emoji." }] },
        { role: "assistant", content: "Hello" }
      ]
    })
    expect(req.system).toEqual([
      { type: "text", text: "You are terse." },
      { type: "text", text: "Answer in English." },
      { type: "text", text: "No emoji." }
    ])
    expect(req.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      { role: "assistant", content: [{ type: "text", text: "Hello" }] }
    ])
  })

  it("turns tool_calls into tool_call parts and tool messages plus the next user message into one user message", () => {
    const req = decode({
      messages: [
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
        { role: "tool", tool_call_id: "call_T2", content: [{ type: "text", text: "14:05" }] },
        { role: "user", content: "Summarize in one line." },
        { role: "user", content: "Please." }
      ]
    })
    expect(req.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather and time in Paris?" }] },
      {
        role: "assistant",
        content: [
          { type: "tool_call", id: "call_W1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
          { type: "tool_call", id: "call_T2", name: "get_time", arguments: "{\"tz\":\"Europe/Paris\"}" }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", toolCallId: "call_W1", content: [{ type: "text", text: "18C, sunny" }] },
          { type: "tool_result", toolCallId: "call_T2", content: [{ type: "text", text: "14:05" }] },
          { type: "text", text: "Summarize in one line." }
        ]
      },
      { role: "user", content: [{ type: "text", text: "Please." }] }
    ])
  })

  it("keeps assistant text before its tool calls and turns refusals into text", () => {
    const req = decode({
      messages: [{
        role: "assistant",
        content: [{ type: "text", text: "Checking. " }, { type: "refusal", refusal: "Not that." }],
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "" } }]
      }]
    })
    expect(req.messages[0].content).toEqual([
      { type: "text", text: "Checking. " },
      { type: "text", text: "Not that." },
      { type: "tool_call", id: "c1", name: "f", arguments: "" }
    ])
  })

  it("decodes image URLs, data URLs and PDF files into image and document parts", () => {
    const req = decode({
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Describe" },
          { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } },
          { type: "image_url", image_url: { url: "data:application/pdf;base64,JVBER" } },
          { type: "file", file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0x" } }
        ]
      }]
    })
    expect(req.messages[0].content).toEqual([
      { type: "text", text: "Describe" },
      { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } },
      { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/4AAQ" } },
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBER" } },
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0x" }, title: "a.pdf" }
    ])
  })

  it("notes harmless losses (image detail, names) in unmapped, and audio and file ids as untranslatable", () => {
    const req = decode({
      messages: [{
        role: "user",
        name: "alice",
        content: [
          { type: "input_audio", input_audio: { data: "UklG", format: "wav" } },
          { type: "file", file: { file_id: "file-abc" } },
          { type: "image_url", image_url: { url: "https://x/y.png", detail: "high" } }
        ]
      }]
    })
    expect(req.unmapped).toEqual({
      "messages[].image_url.detail": 1,
      "messages[].name": 1
    })
    expect(req.untranslatable).toEqual(["messages[].input_audio", "messages[].file.file_id"])
  })

  it("maps the sampling, limit, stream and user fields", () => {
    const req = decode({
      max_tokens: 100,
      max_completion_tokens: 200,
      temperature: 0.2,
      top_p: 0.9,
      stop: "END",
      stream: true,
      stream_options: { include_usage: true },
      user: "u-1"
    })
    expect(req).toMatchObject({
      maxTokens: 200,
      temperature: 0.2,
      topP: 0.9,
      stop: ["END"],
      stream: true,
      includeUsage: true,
      user: "u-1"
    })
    expect(decode({ max_tokens: 100, stop: ["a", "b"] })).toMatchObject({ maxTokens: 100, stop: ["a", "b"] })
    expect(decode({})).toMatchObject({ stream: false, includeUsage: false, maxTokens: undefined })
    expect(decode({ safety_identifier: "hash-1" }).user).toBe("hash-1")
  })

  it("maps every tool_choice form and parallel_tool_calls", () => {
    const tool = (name: string) => ({ type: "function", function: { name, parameters: { type: "object" } } })
    expect(decode({ tool_choice: "auto" }).toolChoice).toEqual({ type: "auto" })
    expect(decode({ tool_choice: "none" }).toolChoice).toEqual({ type: "none" })
    expect(decode({ tool_choice: "required" }).toolChoice).toEqual({ type: "required" })
    expect(decode({ tool_choice: { type: "function", function: { name: "f" } } }).toolChoice).toEqual({
      type: "tool",
      name: "f"
    })
    expect(decode({ parallel_tool_calls: false }).parallelToolCalls).toBe(false)
    const allowed = decode({
      tools: [tool("a"), tool("b"), tool("c")],
      tool_choice: {
        type: "allowed_tools",
        allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "b" } }] }
      }
    })
    expect(allowed.tools).toEqual([{ name: "b", parameters: { type: "object" } }])
    expect(allowed.toolChoice).toEqual({ type: "required" })
  })

  it("keeps custom tools and custom tool choices out of the canonical request, and untranslatable", () => {
    const req = decode({
      tools: [{ type: "custom", custom: { name: "grammar" } }, { type: "function", function: { name: "f" } }],
      tool_choice: { type: "custom", custom: { name: "grammar" } }
    })
    expect(req.tools).toEqual([{ name: "f", parameters: {} }])
    expect(req.toolChoice).toBeUndefined()
    expect(req.unmapped).toEqual({ tool_choice: { type: "custom", custom: { name: "grammar" } } })
    expect(req.untranslatable).toEqual(["tools[].custom"])
  })

  it("decodes reasoning_effort; n above 1, audio output and hosted web search are untranslatable", () => {
    expect(decode({ reasoning_effort: "low" }).reasoningEffort).toBe("low")
    expect(decode({ n: 2, audio: { voice: "alloy" }, modalities: ["text", "audio"], web_search_options: {} }).untranslatable).toEqual([
      "n",
      "audio",
      "web_search_options",
      "modalities"
    ])
    expect(decode({ n: 1, modalities: ["text"] }).untranslatable).toEqual([])
  })

  it("decodes response_format", () => {
    expect(decode({ response_format: { type: "json_object" } }).responseFormat).toEqual({ type: "json_object" })
    expect(
      decode({
        response_format: {
          type: "json_schema",
          json_schema: { name: "weather", strict: true, schema: { type: "object" } }
        }
      }).responseFormat
    ).toEqual({ type: "json_schema", name: "weather", strict: true, schema: { type: "object" } })
  })

  it("puts every other top-level field into unmapped under its wire name, skipping nulls and n: 1", () => {
    const req = decode({
      seed: 7,
      logprobs: true,
      n: 2,
      frequency_penalty: 0.5,
      metadata: { tag: "x" },
      store: true,
      presence_penalty: null
    })
    expect(req.unmapped).toEqual({
      seed: 7,
      logprobs: true,
      n: 2,
      frequency_penalty: 0.5,
      metadata: { tag: "x" },
      store: true
    })
    expect(decode({ n: 1 }).unmapped).toEqual({})
  })

  it("rejects invalid bodies with a message naming the field", () => {
    expect(failure({ model: "m", messages: [{ role: "user", content: "a" }, { role: "user", content: 3 }] })).toEqual({
      message: "messages[1].content: expected string or array of content parts",
      param: "messages[1].content"
    })
    expect(failure({ messages: [] })).toEqual({ message: "model: required field is missing", param: "model" })
    expect(failure({ model: "m", messages: [{ role: "bot", content: "x" }] })).toEqual({
      message: "messages[0]: expected a message with role \"system\", \"developer\", \"user\", \"assistant\" or \"tool\"",
      param: "messages[0]"
    })
    expect(failure({ model: "m", messages: [{ role: "user", content: [{ type: "video" }] }] }).param).toBe(
      "messages[0].content[0]"
    )
    expect(
      failure({
        model: "m",
        messages: [{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { arguments: "{}" } }] }]
      })
    ).toEqual({
      message: "messages[0].tool_calls[0].function.name: required field is missing",
      param: "messages[0].tool_calls[0].function.name"
    })
    expect(failure({ model: "m", messages: [], temperature: "hot" }).message).toBe(
      "temperature: expected number | null"
    )
    expect(failure({ model: "m", messages: [], response_format: { type: "json_schema" } })).toEqual({
      message: "response_format.json_schema: required field is missing",
      param: "response_format.json_schema"
    })
    expect(failure("text")).toEqual({ message: "request body must be a JSON object", param: undefined })
  })
})
