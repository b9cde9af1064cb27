import { describe, expect, it } from "vitest"
import { summarizeChatJson } from "../../src/formats/summary.ts"

const openAi = {
  id: "chatcmpl-1",
  object: "chat.completion",
  model: "gpt-4o-2024-08-06",
  choices: [{ index: 0, message: { role: "assistant", content: 'a tricky answer: "usage": {"prompt_tokens": 999}, "model": "fake"' }, finish_reason: "length" }],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 } }
}

const anthropic = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [{ type: "tool_use", id: "toolu_1", name: "f", input: { usage: { input_tokens: 1 }, note: "}{" } }],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: { input_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 0, output_tokens: 7, service_tier: "standard" }
}

describe("summaries of verbatim chat bodies (the fast path's log fields)", () => {
  it("reads model, finish reason and usage of a completion, ignoring look-alikes inside strings", () => {
    expect(summarizeChatJson("openai", JSON.stringify(openAi))).toEqual({
      model: "gpt-4o-2024-08-06",
      stopReason: "max_tokens",
      usage: { inputTokens: 12, outputTokens: 5, cacheReadTokens: 4 }
    })
  })
  it("reads pretty-printed bodies too", () => {
    expect(summarizeChatJson("openai", JSON.stringify(openAi, null, 2)).usage?.outputTokens).toBe(5)
  })
  it("reads a message, its stop reason and usage (cached input counted in), not a nested usage key", () => {
    expect(summarizeChatJson("anthropic", JSON.stringify(anthropic))).toEqual({
      model: "claude-sonnet-4-5-20250929",
      stopReason: "tool_use",
      usage: { inputTokens: 15, outputTokens: 7, cacheReadTokens: 5, cacheWriteTokens: 0 }
    })
  })
  it("a body without those fields gives nothing rather than failing", () => {
    expect(summarizeChatJson("openai", "{\"error\":{\"message\":\"x\"}}")).toEqual({ model: undefined, stopReason: undefined, usage: undefined })
    expect(summarizeChatJson("anthropic", "not json")).toEqual({ model: undefined, stopReason: undefined, usage: undefined })
  })
})
