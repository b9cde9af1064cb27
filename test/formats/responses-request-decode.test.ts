import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../../src/domain/chat.ts"
import { decodeResponsesRequest } from "../../src/formats/openai-responses/index.ts"

const decode = (body: unknown): ChatRequest => {
  const result = decodeResponsesRequest(body)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const failure = (body: unknown) => {
  const result = decodeResponsesRequest(body)
  if (Result.isSuccess(result)) throw new Error("expected a decode failure")
  return result.failure
}

describe("Responses request decoding", () => {
  it("decodes a string input as one user message, with usage always on", () => {
    expect(decode({ model: "gpt-4.1", input: "Tell me a joke." })).toEqual({
      model: "gpt-4.1",
      system: [],
      messages: [{ role: "user", content: [{ type: "text", text: "Tell me a joke." }] }],
      stream: false,
      includeUsage: true,
      unmapped: {},
      untranslatable: []
    })
  })

  it("puts instructions first in system, then system and developer items in order", () => {
    const req = decode({
      model: "m",
      instructions: "Be terse.",
      input: [
        { role: "developer", content: "Answer in French." },
        { role: "user", content: "Hi" },
        { type: "message", role: "system", content: [{ type: "input_text", text: "No emoji." }] }
      ]
    })
    expect(req.system).toEqual([
      { type: "text", text: "Be terse." },
      { type: "text", text: "Answer in French." },
      { type: "text", text: "No emoji." }
    ])
    expect(req.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }])
  })

  it("decodes the docs/reference/openai-other.md §7.1 item list: images, a function-call turn; a file id is untranslatable", () => {
    const req = decode({
      model: "m",
      input: [
        { role: "developer", content: "Be terse." },
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is in this picture?" },
            { type: "input_image", image_url: "https://example.com/cat.png", detail: "auto" },
            { type: "input_file", file_id: "file-abc123" }
          ]
        },
        { type: "function_call", call_id: "call_123", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { type: "function_call_output", call_id: "call_123", output: "{\"temp_c\":18}" }
      ]
    })
    expect(req.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "What is in this picture?" },
          { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } }
        ]
      },
      {
        role: "assistant",
        content: [{ type: "tool_call", id: "call_123", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }]
      },
      {
        role: "user",
        content: [{ type: "tool_result", toolCallId: "call_123", content: [{ type: "text", text: "{\"temp_c\":18}" }] }]
      }
    ])
    expect(req.unmapped).toEqual({})
    expect(req.untranslatable).toEqual(["input[].input_file.file_id"])
  })

  it("merges an assistant message and its function calls into one turn, and their outputs with the next user message", () => {
    const req = decode({
      model: "m",
      input: [
        { role: "user", content: "Weather and time in Paris?" },
        {
          type: "message",
          id: "msg_1",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: "Checking.", annotations: [] }]
        },
        { type: "reasoning", id: "rs_1", summary: [] },
        { type: "function_call", id: "fc_1", call_id: "call_1", name: "weather", arguments: "{}", status: "completed" },
        { type: "function_call", id: "fc_2", call_id: "call_2", name: "time", arguments: "{}", status: "completed" },
        { type: "function_call_output", call_id: "call_1", output: "18C" },
        {
          type: "function_call_output",
          call_id: "call_2",
          output: [{ type: "input_text", text: "14:00" }, { type: "input_image", image_url: "data:image/png;base64,AAA" }]
        },
        { role: "user", content: "Thanks. And tomorrow?" },
        { role: "user", content: "In Celsius." }
      ]
    })
    expect(req.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather and time in Paris?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool_call", id: "call_1", name: "weather", arguments: "{}" },
          { type: "tool_call", id: "call_2", name: "time", arguments: "{}" }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", toolCallId: "call_1", content: [{ type: "text", text: "18C" }] },
          {
            type: "tool_result",
            toolCallId: "call_2",
            content: [
              { type: "text", text: "14:00" },
              { type: "image", source: { kind: "base64", mediaType: "image/png", data: "AAA" } }
            ]
          },
          { type: "text", text: "Thanks. And tomorrow?" }
        ]
      },
      { role: "user", content: [{ type: "text", text: "In Celsius." }] }
    ])
    expect(req.unmapped).toEqual({ "input[].reasoning": 1 })
  })

  it("reads assistant history given as a plain string and refusals as text", () => {
    const req = decode({
      model: "m",
      input: [
        { role: "assistant", content: "Hello." },
        { type: "message", role: "assistant", content: [{ type: "refusal", refusal: "I can't." }] }
      ]
    })
    expect(req.messages).toEqual([
      { role: "assistant", content: [{ type: "text", text: "Hello." }, { type: "text", text: "I can't." }] }
    ])
  })

  it("decodes input files given as data or URL, and notes what only a stored file could carry", () => {
    const req = decode({
      model: "m",
      input: [{
        role: "user",
        content: [
          { type: "input_file", filename: "a.pdf", file_data: "data:application/pdf;base64,JVBE" },
          { type: "input_file", file_url: "https://example.com/b.pdf" },
          { type: "input_image", file_id: "file-1", detail: "high" },
          { type: "input_image", image_url: "https://example.com/c.png", detail: "low" }
        ]
      }, { type: "item_reference", id: "msg_old" }]
    })
    expect(req.messages[0].content).toEqual([
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, title: "a.pdf" },
      { type: "document", source: { kind: "url", url: "https://example.com/b.pdf" }, title: undefined },
      { type: "image", source: { kind: "url", url: "https://example.com/c.png" } }
    ])
    expect(req.unmapped).toEqual({ "input[].input_image.detail": 2 })
    expect(req.untranslatable).toEqual(["input[].input_image.file_id", "input[].item_reference"])
  })

  it("decodes flat function tools, tool_choice, sampling settings, text.format and the user", () => {
    const req = decode({
      model: "m",
      input: "x",
      stream: true,
      max_output_tokens: 256,
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      user: "u-1",
      tools: [
        {
          type: "function",
          name: "get_weather",
          description: "Weather by city",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          strict: true
        },
        { type: "web_search" },
        { type: "mcp", server_label: "x" }
      ],
      tool_choice: { type: "function", name: "get_weather" },
      text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } }
    })
    expect(req).toMatchObject({
      stream: true,
      includeUsage: true,
      maxTokens: 256,
      temperature: 0.2,
      topP: 0.9,
      parallelToolCalls: false,
      user: "u-1",
      tools: [{
        name: "get_weather",
        description: "Weather by city",
        parameters: { type: "object", properties: { city: { type: "string" } } },
        strict: true
      }],
      toolChoice: { type: "tool", name: "get_weather" },
      responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true }
    })
    expect(req.unmapped).toEqual({})
    expect(req.untranslatable).toEqual(["tools[].web_search", "tools[].mcp"])
  })

  it("maps the simple tool choices and allowed_tools; a built-in tool choice is untranslatable", () => {
    expect(decode({ model: "m", input: "x", tool_choice: "required" }).toolChoice).toEqual({ type: "required" })
    expect(decode({ model: "m", input: "x", tool_choice: "none" }).toolChoice).toEqual({ type: "none" })
    const allowed = decode({
      model: "m",
      input: "x",
      tools: [
        { type: "function", name: "a", parameters: {} },
        { type: "function", name: "b", parameters: {} }
      ],
      tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "b" }] }
    })
    expect(allowed.toolChoice).toEqual({ type: "required" })
    expect(allowed.tools?.map((tool) => tool.name)).toEqual(["b"])
    const builtIn = decode({ model: "m", input: "x", tool_choice: { type: "web_search_preview" } })
    expect(builtIn.toolChoice).toBeUndefined()
    expect(builtIn.unmapped).toEqual({})
    expect(builtIn.untranslatable).toEqual(["tool_choice"])
  })

  it("decodes text and json_object formats, and keeps verbosity as unmapped", () => {
    expect(decode({ model: "m", input: "x", text: { format: { type: "json_object" } } }).responseFormat).toEqual({
      type: "json_object"
    })
    const req = decode({ model: "m", input: "x", text: { format: { type: "text" }, verbosity: "low" } })
    expect(req.responseFormat).toEqual({ type: "text" })
    expect(req.unmapped).toEqual({ "text.verbosity": "low" })
  })

  it("takes safety_identifier as the user when there is no user, and keeps it when both are set", () => {
    expect(decode({ model: "m", input: "x", safety_identifier: "s" }).user).toBe("s")
    const both = decode({ model: "m", input: "x", user: "u", safety_identifier: "s" })
    expect(both.user).toBe("u")
    expect(both.unmapped).toEqual({ safety_identifier: "s" })
  })

  it("keeps fields without a canonical home under their wire names; server-side state is untranslatable", () => {
    const req = decode({
      model: "m",
      input: "x",
      store: true,
      previous_response_id: "resp_1",
      reasoning: { effort: "high", summary: "auto" },
      include: ["reasoning.encrypted_content"],
      metadata: { k: "v" },
      truncation: "auto",
      background: true,
      prompt: { id: "pmpt_1" },
      service_tier: "flex",
      stream_options: { include_obfuscation: false },
      instructions: null,
      temperature: null
    })
    expect(req.unmapped).toEqual({
      store: true,
      previous_response_id: "resp_1",
      "reasoning.summary": "auto",
      include: ["reasoning.encrypted_content"],
      metadata: { k: "v" },
      truncation: "auto",
      background: true,
      prompt: { id: "pmpt_1" },
      service_tier: "flex",
      stream_options: { include_obfuscation: false }
    })
    expect(req.reasoningEffort).toBe("high")
    expect(req.untranslatable).toEqual(["previous_response_id", "prompt", "background"])
    expect(req.system).toEqual([])
    expect(req.temperature).toBeUndefined()
  })

  it("does not report settings that restate what the gateway does anyway", () => {
    expect(decode({ model: "m", input: "x", store: false, background: false, truncation: "disabled" }).unmapped).toEqual({})
  })

  it("names the offending field when the body is invalid", () => {
    expect(failure([])).toEqual({ message: "request body must be a JSON object" })
    expect(failure({ model: "m" })).toEqual({ message: "input: required field is missing", param: "input" })
    expect(failure({ model: "m", input: [{ type: "function_call", call_id: "c", arguments: "{}" }] })).toEqual({
      message: "input[0].name: required field is missing",
      param: "input[0].name"
    })
    expect(failure({ model: "m", input: [{ role: "user", content: 5 }] }).param).toBe("input[0].content")
    expect(failure({ model: "m", input: [{ role: "tool", content: "x" }] }).param).toBe("input[0].role")
    expect(failure({ model: "m", input: [{ role: "user", content: [{ type: "input_audio" }] }] }).param).toBe(
      "input[0].content[0]"
    )
    expect(failure({ model: "m", input: "x", tools: [{ type: "function", parameters: {} }] }).param).toBe(
      "tools[0].name"
    )
    expect(failure({ model: "m", input: "x", text: { format: { type: "json_schema", schema: {} } } }).param).toBe(
      "text.format.name"
    )
  })
})
