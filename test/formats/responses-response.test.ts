import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatResponse } from "../../src/domain/chat.ts"
import { decodeResponsesRequest, encodeResponsesResponse } from "../../src/formats/openai-responses/index.ts"

const TEXT: ChatResponse = {
  id: "chatcmpl-67ccd2bed1ec",
  model: "gpt-4.1-2025-04-14",
  created: 1741476542,
  content: [{ type: "text", text: "Hello" }, { type: "text", text: " there!" }],
  stopReason: "end_turn",
  usage: { inputTokens: 36, outputTokens: 87, cacheReadTokens: 4, reasoningTokens: 10 }
}

const TOOLS: ChatResponse = {
  id: "msg_01T1x",
  model: "claude-sonnet-4-5",
  created: 1741476600,
  content: [
    { type: "text", text: "Let me check." },
    { type: "tool_call", id: "toolu_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
    { type: "tool_call", id: "toolu_2", name: "get_time", arguments: "{}" }
  ],
  stopReason: "tool_use",
  usage: { inputTokens: 60, outputTokens: 18 }
}

describe("Responses response encoding", () => {
  it("encodes a text answer as the complete docs/reference/openai-other.md §7.2 Response object", () => {
    expect(encodeResponsesResponse(TEXT, { model: "gpt-4.1" })).toEqual({
      id: "resp_67ccd2bed1ec",
      object: "response",
      created_at: 1741476542,
      status: "completed",
      background: false,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      model: "gpt-4.1",
      output: [{
        id: "msg_67ccd2bed1ec",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Hello there!", annotations: [], logprobs: [] }]
      }],
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      store: false,
      temperature: 1,
      text: { format: { type: "text" } },
      tool_choice: "auto",
      tools: [],
      top_p: 1,
      truncation: "disabled",
      usage: {
        input_tokens: 36,
        input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
        output_tokens: 87,
        output_tokens_details: { reasoning_tokens: 10 },
        total_tokens: 123
      },
      user: null,
      metadata: {}
    })
  })

  it("encodes each tool call as a completed function_call item after the message, keyed by call_id", () => {
    const res = encodeResponsesResponse(TOOLS)
    expect(res.id).toBe("resp_01T1x")
    expect(res.model).toBe("claude-sonnet-4-5")
    expect(res.status).toBe("completed")
    expect(res.output).toEqual([
      {
        id: "msg_01T1x",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Let me check.", annotations: [], logprobs: [] }]
      },
      {
        type: "function_call",
        id: "fc_01T1x_1",
        call_id: "toolu_1",
        name: "get_weather",
        arguments: "{\"city\":\"Paris\"}",
        status: "completed"
      },
      { type: "function_call", id: "fc_01T1x_2", call_id: "toolu_2", name: "get_time", arguments: "{}", status: "completed" }
    ])
  })

  it("has no message item when there is no text", () => {
    const res = encodeResponsesResponse({ ...TOOLS, content: [TOOLS.content[1]] })
    expect(res.output).toEqual([
      {
        type: "function_call",
        id: "fc_01T1x_0",
        call_id: "toolu_1",
        name: "get_weather",
        arguments: "{\"city\":\"Paris\"}",
        status: "completed"
      }
    ])
  })

  it("is incomplete with reason max_output_tokens when the answer was cut, its last item too", () => {
    const res = encodeResponsesResponse({ ...TEXT, stopReason: "max_tokens" })
    expect(res.status).toBe("incomplete")
    expect(res.incomplete_details).toEqual({ reason: "max_output_tokens" })
    expect((res.output as Array<{ status: string }>).map((item) => item.status)).toEqual(["incomplete"])
    const tools = encodeResponsesResponse({ ...TOOLS, stopReason: "max_tokens" })
    expect((tools.output as Array<{ status: string }>).map((item) => item.status)).toEqual([
      "completed",
      "completed",
      "incomplete"
    ])
  })

  it("is incomplete with reason content_filter when the upstream filtered the answer", () => {
    const res = encodeResponsesResponse({ ...TEXT, stopReason: "content_filter" })
    expect(res.status).toBe("incomplete")
    expect(res.incomplete_details).toEqual({ reason: "content_filter" })
  })

  it("is completed for a stop sequence", () => {
    expect(encodeResponsesResponse({ ...TEXT, stopReason: "stop_sequence" }).status).toBe("completed")
  })

  it("echoes the caller's settings from the decoded request", () => {
    const decoded = decodeResponsesRequest({
      model: "gpt-4.1",
      instructions: "Be terse.",
      input: "x",
      max_output_tokens: 100,
      temperature: 0.5,
      top_p: 0.8,
      parallel_tool_calls: false,
      user: "u-1",
      metadata: { trace: "t1" },
      tools: [{ type: "function", name: "f", description: "d", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "f" },
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } }
    })
    if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
    expect(encodeResponsesResponse(TEXT, { model: "gpt-4.1", request: decoded.success })).toMatchObject({
      instructions: "Be terse.",
      max_output_tokens: 100,
      temperature: 0.5,
      top_p: 0.8,
      parallel_tool_calls: false,
      user: "u-1",
      metadata: { trace: "t1" },
      tools: [{ type: "function", name: "f", description: "d", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "f" },
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } }
    })
  })
})
