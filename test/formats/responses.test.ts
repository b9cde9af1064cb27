import { Result } from "effect"
import type { DecodeFailure } from "../../src/formats/contract.ts"
import { describe, expect, it } from "vitest"
import type { ChatResponse, StopReason } from "../../src/domain/chat.ts"
import { Anthropic, OpenAiChat } from "../../src/formats/index.ts"

const { decodeOpenAiChatResponse, encodeOpenAiChatResponse } = OpenAiChat
const { decodeAnthropicResponse, encodeAnthropicResponse } = Anthropic

/** docs/reference/anthropic-messages.md §3 */
const ANTHROPIC_MESSAGE = {
  id: "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [
    { type: "text", text: "I'll check the current weather in Paris for you." },
    { type: "tool_use", id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", input: { city: "Paris" } }
  ],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: {
    input_tokens: 377,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: 65,
    service_tier: "standard"
  }
}

/** docs/reference/openai-chat.md §3 */
const OPENAI_COMPLETION = {
  id: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  object: "chat.completion",
  created: 1741570283,
  model: "gpt-4o-2024-08-06",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "It is 18 °C and sunny in Paris.", refusal: null, annotations: [] },
    logprobs: null,
    finish_reason: "stop"
  }],
  usage: {
    prompt_tokens: 31,
    completion_tokens: 12,
    total_tokens: 43,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0
    }
  },
  service_tier: "default",
  system_fingerprint: "fp_fc9f1d7035"
}

const ok = <A>(result: Result.Result<A, DecodeFailure>): A => {
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const response = (patch: Partial<ChatResponse>): ChatResponse => ({
  id: "x",
  model: "m",
  created: 1,
  content: [{ type: "text", text: "hi" }],
  stopReason: "end_turn",
  usage: { inputTokens: 1, outputTokens: 1 },
  ...patch
})

describe("Messages response → Chat completion (C→A response leg, docs/reference/translation.md §8.1)", () => {
  it("translates the docs/reference/anthropic-messages.md §3 message exactly", () => {
    const canonical = ok(decodeAnthropicResponse(ANTHROPIC_MESSAGE, { created: 1741570000 }))
    expect(encodeOpenAiChatResponse(canonical)).toEqual({
      id: "chatcmpl-msg_013Zva2CMHLNnXjNJJKqJ2EF",
      object: "chat.completion",
      created: 1741570000,
      model: "claude-sonnet-4-5-20250929",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: "I'll check the current weather in Paris for you.",
          refusal: null,
          tool_calls: [{
            id: "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            type: "function",
            function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" }
          }]
        },
        logprobs: null,
        finish_reason: "tool_calls"
      }],
      usage: { prompt_tokens: 377, completion_tokens: 65, total_tokens: 442, prompt_tokens_details: { cached_tokens: 0 } }
    })
  })

  it("decodes text blocks, tool_use input as JSON text, and thinking blocks as reasoning with their signature", () => {
    expect(
      ok(decodeAnthropicResponse({
        ...ANTHROPIC_MESSAGE,
        content: [
          { type: "thinking", thinking: "…", signature: "s" },
          { type: "text", text: "A" },
          { type: "text", text: "B", citations: [] },
          { type: "tool_use", id: "t", name: "f", input: { a: [1] } }
        ],
        stop_reason: "stop_sequence",
        stop_sequence: "END"
      }, { created: 5 }))
    ).toEqual({
      id: "msg_013Zva2CMHLNnXjNJJKqJ2EF",
      model: "claude-sonnet-4-5-20250929",
      created: 5,
      content: [
        { type: "reasoning", text: "…", signature: "s" },
        { type: "text", text: "A" },
        { type: "text", text: "B" },
        { type: "tool_call", id: "t", name: "f", arguments: "{\"a\":[1]}" }
      ],
      stopReason: "stop_sequence",
      stopSequence: "END",
      usage: { inputTokens: 377, outputTokens: 65, cacheReadTokens: 0, cacheWriteTokens: 0 }
    })
  })

  it("concatenates text, sends null content with no text, and leaves tool_calls out when there are none", () => {
    const text = encodeOpenAiChatResponse(response({ content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }))
    expect((text.choices as Array<{ message: unknown }>)[0].message).toEqual({ role: "assistant", content: "ab", refusal: null })
    const toolOnly = encodeOpenAiChatResponse(response({ content: [{ type: "tool_call", id: "t", name: "f", arguments: "{}" }] }))
    expect((toolOnly.choices as Array<{ message: { content: unknown } }>)[0].message.content).toBeNull()
  })

  it("maps every stop_reason to its finish_reason (refusal → content_filter)", () => {
    const finishOf = (stop_reason: string | null) =>
      (encodeOpenAiChatResponse(ok(decodeAnthropicResponse({ ...ANTHROPIC_MESSAGE, stop_reason })))
        .choices as Array<{ finish_reason: string }>)[0].finish_reason
    expect(
      ["end_turn", "stop_sequence", "max_tokens", "tool_use", "pause_turn", "refusal", "model_context_window_exceeded", null]
        .map(finishOf)
    ).toEqual(["stop", "stop", "length", "tool_calls", "stop", "content_filter", "length", "stop"])
  })

  it("counts cache reads and writes inside prompt_tokens and reports them as details", () => {
    const canonical = ok(decodeAnthropicResponse({
      ...ANTHROPIC_MESSAGE,
      usage: {
        input_tokens: 10,
        cache_creation_input_tokens: 200,
        cache_read_input_tokens: 1000,
        output_tokens: 50,
        output_tokens_details: { thinking_tokens: 20 }
      }
    }))
    expect(canonical.usage).toEqual({
      inputTokens: 1210,
      outputTokens: 50,
      cacheReadTokens: 1000,
      cacheWriteTokens: 200,
      reasoningTokens: 20
    })
    expect(encodeOpenAiChatResponse(canonical).usage).toEqual({
      prompt_tokens: 1210,
      completion_tokens: 50,
      total_tokens: 1260,
      prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 200 },
      completion_tokens_details: { reasoning_tokens: 20 }
    })
  })

  it("shows the configured model name and keeps an id that is already chatcmpl-", () => {
    expect(encodeOpenAiChatResponse(response({ id: "chatcmpl-1" }), { model: "alias" })).toMatchObject({
      id: "chatcmpl-1",
      model: "alias"
    })
  })

  it("reports a malformed Messages body as a failure instead of crashing", () => {
    expect(decodeAnthropicResponse("nope")).toEqual(Result.fail({ message: "upstream response is not a JSON object" }))
    expect(decodeAnthropicResponse({ type: "message" })).toEqual(Result.fail({
      message: "upstream response has no content array"
    }))
    expect(decodeAnthropicResponse({ content: ["x"] })).toEqual(Result.fail({
      message: "upstream response has a malformed content block"
    }))
  })
})

describe("Chat completion → Messages response (A→C response leg, docs/reference/translation.md §8.2)", () => {
  it("translates the docs/reference/openai-chat.md §3 completion exactly", () => {
    expect(encodeAnthropicResponse(ok(decodeOpenAiChatResponse(OPENAI_COMPLETION)))).toEqual({
      id: "msg_chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
      type: "message",
      role: "assistant",
      model: "gpt-4o-2024-08-06",
      content: [{ type: "text", text: "It is 18 °C and sunny in Paris." }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 31, cache_read_input_tokens: 0, output_tokens: 12 }
    })
  })

  it("translates a tool-call completion: no text block, input parsed, ids cleaned", () => {
    const completion = {
      id: "chatcmpl-Bx1",
      object: "chat.completion",
      created: 1741570300,
      model: "gpt-4o-2024-08-06",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: null,
          refusal: null,
          tool_calls: [
            { id: "call_Zx8kq2", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } },
            { id: "functions.f:1", type: "function", function: { name: "f", arguments: "not json" } }
          ]
        },
        logprobs: null,
        finish_reason: "tool_calls"
      }],
      usage: { prompt_tokens: 80, completion_tokens: 17, total_tokens: 97 }
    }
    const canonical = ok(decodeOpenAiChatResponse(completion))
    expect(canonical).toEqual({
      id: "chatcmpl-Bx1",
      model: "gpt-4o-2024-08-06",
      created: 1741570300,
      content: [
        { type: "tool_call", id: "call_Zx8kq2", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { type: "tool_call", id: "functions.f:1", name: "f", arguments: "not json" }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 80, outputTokens: 17 }
    })
    expect(encodeAnthropicResponse(canonical)).toEqual({
      id: "msg_chatcmpl-Bx1",
      type: "message",
      role: "assistant",
      model: "gpt-4o-2024-08-06",
      content: [
        { type: "tool_use", id: "call_Zx8kq2", name: "get_weather", input: { city: "Paris" } },
        { type: "tool_use", id: "functions_f_1", name: "f", input: {} }
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 80, output_tokens: 17 }
    })
  })

  it("turns a refusal into a text block with stop_reason refusal", () => {
    const refused = {
      ...OPENAI_COMPLETION,
      choices: [{ index: 0, message: { role: "assistant", content: null, refusal: "I can't help with that." }, finish_reason: "stop" }]
    }
    expect(encodeAnthropicResponse(ok(decodeOpenAiChatResponse(refused)))).toMatchObject({
      content: [{ type: "text", text: "I can't help with that." }],
      stop_reason: "refusal"
    })
  })

  it("maps every finish_reason to its stop_reason (content_filter → refusal)", () => {
    const stopOf = (finish_reason: string | null, tool_calls?: unknown) =>
      encodeAnthropicResponse(
        ok(decodeOpenAiChatResponse({
          ...OPENAI_COMPLETION,
          choices: [{ index: 0, message: { role: "assistant", content: "x", tool_calls }, finish_reason }]
        }))
      ).stop_reason
    expect(["stop", "length", "tool_calls", "function_call", "content_filter", null].map((f) => stopOf(f))).toEqual([
      "end_turn",
      "max_tokens",
      "tool_use",
      "tool_use",
      "refusal",
      "end_turn"
    ])
    const call = [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }]
    expect(stopOf("stop", call)).toBe("tool_use")
  })

  it("subtracts cached tokens from input_tokens so nothing is counted twice", () => {
    const canonical = ok(decodeOpenAiChatResponse({
      ...OPENAI_COMPLETION,
      usage: {
        prompt_tokens: 1000,
        completion_tokens: 40,
        prompt_tokens_details: { cached_tokens: 800, cache_write_tokens: 100 },
        completion_tokens_details: { reasoning_tokens: 25 }
      }
    }))
    expect(canonical.usage).toEqual({
      inputTokens: 1000,
      outputTokens: 40,
      cacheReadTokens: 800,
      cacheWriteTokens: 100,
      reasoningTokens: 25
    })
    expect(encodeAnthropicResponse(canonical).usage).toEqual({
      input_tokens: 100,
      cache_creation_input_tokens: 100,
      cache_read_input_tokens: 800,
      output_tokens: 40
    })
  })

  it("keeps the stop sequence and leaves out empty text", () => {
    expect(
      encodeAnthropicResponse(
        response({ content: [{ type: "text", text: "" }], stopReason: "stop_sequence", stopSequence: "END" }),
        { model: "alias" }
      )
    ).toMatchObject({ id: "msg_x", model: "alias", content: [], stop_reason: "stop_sequence", stop_sequence: "END" })
  })

  it("encodes every canonical stop reason in the Messages vocabulary", () => {
    const reasons: Array<StopReason> = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "content_filter", "pause_turn"]
    expect(reasons.map((stopReason) => encodeAnthropicResponse(response({ stopReason })).stop_reason)).toEqual([
      "end_turn",
      "max_tokens",
      "stop_sequence",
      "tool_use",
      "refusal",
      "pause_turn"
    ])
  })

  it("reports a malformed completion as a failure instead of crashing", () => {
    expect(decodeOpenAiChatResponse(null)).toEqual(Result.fail({ message: "upstream response is not a JSON object" }))
    expect(decodeOpenAiChatResponse({ choices: [] })).toEqual(Result.fail({
      message: "upstream response has no choices[0].message"
    }))
    expect(
      decodeOpenAiChatResponse({ choices: [{ message: { content: null, tool_calls: [{ id: "c" }] } }] })
    ).toEqual(Result.fail({ message: "upstream response has a malformed tool call" }))
  })

  it("fills usage with zeros and created with the given time when a compatible server leaves them out", () => {
    expect(
      ok(decodeOpenAiChatResponse({ id: "c", model: "m", choices: [{ message: { content: "hi" }, finish_reason: "stop" }] }, {
        created: 99
      }))
    ).toEqual({
      id: "c",
      model: "m",
      created: 99,
      content: [{ type: "text", text: "hi" }],
      stopReason: "end_turn",
      usage: { inputTokens: 0, outputTokens: 0 }
    })
  })
})
