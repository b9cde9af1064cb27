import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../../src/domain/chat.ts"
import { Anthropic } from "../../src/formats/index.ts"

const { decodeAnthropicRequest } = Anthropic

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

const failure = (body: Record<string, unknown>) => {
  const result = decodeAnthropicRequest(body)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return result.failure
}

describe("Messages request decoder", () => {
  it("decodes system as a string or as text blocks", () => {
    expect(decode({ system: "Be brief." }).system).toEqual([{ type: "text", text: "Be brief." }])
    expect(decode({ system: [{ type: "text", text: "A" }, { type: "text", text: "B" }] }).system).toEqual([
      { type: "text", text: "A" },
      { type: "text", text: "B" }
    ])
  })

  it("decodes text, image, document, tool_use and tool_result blocks", () => {
    const req = decode({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Look" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBOR" } },
            { type: "image", source: { type: "url", url: "https://x/cat.png" } },
            { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBER" }, title: "Doc" },
            { type: "document", source: { type: "text", media_type: "text/plain", data: "plain words" } }
          ]
        },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "18C" },
            {
              type: "tool_result",
              tool_use_id: "toolu_2",
              is_error: true,
              content: [{ type: "text", text: "failed" }, { type: "image", source: { type: "url", url: "https://x/e.png" } }]
            },
            { type: "tool_result", tool_use_id: "toolu_3" }
          ]
        }
      ]
    })
    expect(req.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Look" },
          { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBOR" } },
          { type: "image", source: { kind: "url", url: "https://x/cat.png" } },
          { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBER" }, title: "Doc" },
          { type: "text", text: "plain words" }
        ]
      },
      {
        role: "assistant",
        content: [{ type: "tool_call", id: "toolu_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", toolCallId: "toolu_1", content: [{ type: "text", text: "18C" }] },
          {
            type: "tool_result",
            toolCallId: "toolu_2",
            isError: true,
            content: [{ type: "text", text: "failed" }, { type: "image", source: { kind: "url", url: "https://x/e.png" } }]
          },
          { type: "tool_result", toolCallId: "toolu_3", content: [] }
        ]
      }
    ])
  })

  it("leaves thinking, redacted thinking and server-tool blocks out and notes them in unmapped", () => {
    const req = decode({
      messages: [
        { role: "user", content: "q" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "hmm", signature: "sig" },
            { type: "redacted_thinking", data: "opaque" },
            { type: "thinking", thinking: "more", signature: "sig2" },
            { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} },
            { type: "text", text: "Answer", cache_control: { type: "ephemeral" } }
          ]
        }
      ]
    })
    // The cache marker stays on its block's part (Bedrock's cachePoint carries it) and is noted for the others.
    expect(req.messages[1].content).toEqual([{ type: "text", text: "Answer", cachePoint: true }])
    expect(req.unmapped).toEqual({
      "messages[].thinking": 2,
      "messages[].redacted_thinking": 1,
      "messages[].server_tool_use": 1,
      "messages[].cache_control": 1
    })
  })

  it("a role: \"system\" message inside messages (SDK 0.137+) joins the system prompt after the top-level one, in order", () => {
    const req = decode({
      system: "Be brief.",
      messages: [
        { role: "system", content: "Answer in French." },
        { role: "user", content: "Hi" },
        { role: "system", content: [{ type: "text", text: "Use metric units." }, { type: "image", source: { type: "url", url: "https://x/y.png" } }] }
      ]
    })
    expect(req.system).toEqual([
      { type: "text", text: "Be brief." },
      { type: "text", text: "Answer in French." },
      { type: "text", text: "Use metric units." }
    ])
    expect(req.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }])
    expect(req.unmapped).toEqual({ "messages[].system.image": 1 })
  })

  it("maps stop_sequences, top_k, metadata.user_id and always includes usage", () => {
    expect(
      decode({ stop_sequences: ["END"], top_k: 5, temperature: 0.5, top_p: 0.9, metadata: { user_id: "u-1" }, stream: true })
    ).toMatchObject({
      maxTokens: 256,
      stop: ["END"],
      topK: 5,
      temperature: 0.5,
      topP: 0.9,
      user: "u-1",
      stream: true,
      includeUsage: true
    })
  })

  it("maps every tool_choice form and disable_parallel_tool_use", () => {
    expect(decode({ tool_choice: { type: "auto" } })).toMatchObject({ toolChoice: { type: "auto" } })
    expect(decode({ tool_choice: { type: "any" } }).toolChoice).toEqual({ type: "required" })
    expect(decode({ tool_choice: { type: "none" } }).toolChoice).toEqual({ type: "none" })
    expect(decode({ tool_choice: { type: "tool", name: "f" } }).toolChoice).toEqual({ type: "tool", name: "f" })
    expect(decode({ tool_choice: { type: "auto", disable_parallel_tool_use: true } }).parallelToolCalls).toBe(false)
    expect(decode({ tool_choice: { type: "auto", disable_parallel_tool_use: false } }).parallelToolCalls).toBeUndefined()
  })

  it("decodes custom tools; a server tool makes the request untranslatable", () => {
    const req = decode({
      tools: [
        { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: {} } },
        { type: "web_search_20250305", name: "web_search", max_uses: 3 }
      ]
    })
    expect(req.tools).toEqual([
      { name: "get_weather", description: "Weather", parameters: { type: "object", properties: {} } }
    ])
    expect(req.unmapped).toEqual({})
    expect(req.untranslatable).toEqual(["tools[].web_search_20250305"])
  })

  it("puts unknown top-level fields into unmapped under their wire names", () => {
    expect(
      decode({ thinking: { type: "enabled", budget_tokens: 2048 }, service_tier: "auto", output_config: { effort: "low", task_budget: 9 } })
        .unmapped
    ).toEqual({
      thinking: { type: "enabled", budget_tokens: 2048 },
      service_tier: "auto",
      "output_config.task_budget": 9
    })
  })

  it("decodes output_config: native structured output as a JSON-schema response format, effort as reasoning effort", () => {
    const closed = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false }
    const req = decode({ output_config: { format: { type: "json_schema", schema: closed }, effort: "high" } })
    expect(req.responseFormat).toEqual({ type: "json_schema", name: "output", schema: closed, strict: true })
    expect(req.reasoningEffort).toBe("high")
    // A schema OpenAI's strict mode would refuse is sent without `strict`.
    const open = { type: "object", properties: { a: { type: "string" } } }
    expect(decode({ output_config: { format: { type: "json_schema", schema: open } } }).responseFormat).toEqual({
      type: "json_schema",
      name: "output",
      schema: open,
      strict: undefined
    })
  })

  it("a stored-file image or a container makes the request untranslatable", () => {
    const req = decode({
      container: "cntr_1",
      messages: [{ role: "user", content: [{ type: "image", source: { type: "file", file_id: "file_1" } }, { type: "text", text: "what is it?" }] }]
    })
    expect(req.untranslatable).toEqual(["container", "messages[].image.file"])
  })

  it("rejects invalid bodies with a message naming the field", () => {
    expect(failure({ model: "m", messages: [] })).toEqual({
      message: "max_tokens: required field is missing",
      param: "max_tokens"
    })
    expect(
      failure({ model: "m", max_tokens: 1, messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] })
    ).toEqual({ message: "messages[0].content[0].text: expected string", param: "messages[0].content[0].text" })
    expect(failure({ model: "m", max_tokens: 1, messages: [{ role: "user", content: 5 }] })).toEqual({
      message: "messages[0].content: expected string or array of content blocks",
      param: "messages[0].content"
    })
    expect(failure({ model: "m", max_tokens: 1, messages: [{ role: "tool", content: "x" }] }).param).toBe(
      "messages[0].role"
    )
    expect(
      failure({
        model: "m",
        max_tokens: 1,
        messages: [{ role: "assistant", content: [{ type: "tool_use", name: "f", input: {} }] }]
      })
    ).toEqual({ message: "messages[0].content[0].id: required field is missing", param: "messages[0].content[0].id" })
    expect(failure({ model: "m", max_tokens: 1, messages: [], tool_choice: { type: "tool" } })).toEqual({
      message: "tool_choice.name: required field is missing",
      param: "tool_choice.name"
    })
    expect(failure({ model: "m", max_tokens: 1, messages: [], tools: [{ name: "f" }] })).toEqual({
      message: "tools[0].input_schema: required field is missing",
      param: "tools[0].input_schema"
    })
  })
})
