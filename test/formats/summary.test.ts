import { describe, expect, it } from "vitest"
import { summarizeChatJson } from "../../src/formats/summary.ts"

const openAi = {
  id: "chatcmpl-1",
  object: "chat.completion",
  model: "gpt-4o-2024-08-06",
  choices: [{ index: 0, message: { role: "assistant", content: 'a tricky answer: "usage": {"prompt_tokens": 999}' }, finish_reason: "length" }],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 } }
}

const anthropic = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [{ type: "text", text: "Let me check. " }, { type: "tool_use", id: "toolu_1", name: "f", input: { usage: { input_tokens: 1 } } }],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: { input_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 0, output_tokens: 7, service_tier: "standard" }
}

const responses = {
  id: "resp_1",
  object: "response",
  status: "incomplete",
  incomplete_details: { reason: "max_output_tokens" },
  model: "gpt-4.1",
  output: [
    { id: "rs_1", type: "reasoning", summary: [] },
    { id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "Hello", annotations: [] }] }
  ],
  usage: { input_tokens: 12, input_tokens_details: { cached_tokens: 2 }, output_tokens: 3, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 15 }
}

describe("summaries of verbatim chat bodies (the fast path's log, telemetry and guardrail fields)", () => {
  it("reads id, model, finish reason, usage and text of a completion", () => {
    expect(summarizeChatJson("openai", openAi)).toEqual({
      id: "chatcmpl-1",
      model: "gpt-4o-2024-08-06",
      stopReason: "max_tokens",
      usage: { inputTokens: 12, outputTokens: 5, cacheReadTokens: 4 },
      text: 'a tricky answer: "usage": {"prompt_tokens": 999}'
    })
  })
  it("reads a message, its stop reason, usage (cached input counted in) and text blocks only", () => {
    expect(summarizeChatJson("anthropic", anthropic)).toEqual({
      id: "msg_1",
      model: "claude-sonnet-4-5-20250929",
      stopReason: "tool_use",
      usage: { inputTokens: 15, outputTokens: 7, cacheReadTokens: 5, cacheWriteTokens: 0 },
      text: "Let me check. ",
      toolCalls: [{ id: "toolu_1", name: "f", arguments: "{\"usage\":{\"input_tokens\":1}}" }]
    })
  })
  it("reads a Responses object: incomplete by max_output_tokens is max_tokens, text of message items", () => {
    expect(summarizeChatJson("responses", responses)).toEqual({
      id: "resp_1",
      model: "gpt-4.1",
      stopReason: "max_tokens",
      usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 2, reasoningTokens: 1 },
      text: "Hello",
      toolCalls: []
    })
  })
  it("reads tool calls of each format, arguments as JSON text", () => {
    const completion = { ...openAi, choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }] }, finish_reason: "tool_calls" }] }
    expect(summarizeChatJson("openai", completion).toolCalls).toEqual([{ id: "call_1", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }])
    const response = { ...responses, status: "completed", output: [{ type: "function_call", id: "fc_1", call_id: "call_2", name: "lookup", arguments: "{}" }] }
    expect(summarizeChatJson("responses", response)).toMatchObject({ stopReason: "tool_use", toolCalls: [{ id: "call_2", name: "lookup", arguments: "{}" }] })
  })
  it("a body without those fields gives nothing rather than failing", () => {
    expect(summarizeChatJson("openai", { error: { message: "x" } })).toEqual({ id: undefined, model: undefined, stopReason: undefined, usage: undefined, text: "" })
    expect(summarizeChatJson("anthropic", "not an object")).toEqual({ text: "" })
  })
})
