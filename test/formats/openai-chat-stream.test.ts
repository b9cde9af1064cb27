import { describe, expect, it } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { OpenAiChat } from "../../src/formats/index.ts"
import { OPENAI_ERROR_STREAM, OPENAI_TEXT_STREAM, OPENAI_TOOLS_STREAM } from "./goldens.ts"
import { chunk, decodeAll, encodeAll, parseSse } from "./sse.ts"

const { makeOpenAiChatStreamDecoder, makeOpenAiChatStreamEncoder } = OpenAiChat

const START = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 100, model: "gpt-x" }
const delta = (d: Record<string, unknown>, finish: string | null = null) =>
  chunk({ ...START, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }] })
const DONE = { data: "[DONE]" }
const messageStart: ChatStreamEvent = { type: "message_start", id: "chatcmpl-1", model: "gpt-x", created: 100 }
const truncated: ChatStreamEvent = {
  type: "error",
  error: { type: "server_error", message: "upstream stream ended before a finish reason", status: 502, malformed: true }
}

describe("Chat Completions stream decoder", () => {
  it("decodes the docs/reference/openai-chat.md §5.4 text stream into start, text, finish, usage and stop", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), parseSse(OPENAI_TEXT_STREAM))).toEqual([
      { type: "message_start", id: "chatcmpl-9Xa1", model: "gpt-4o-2024-08-06", created: 1735689600 },
      { type: "text_delta", text: "Hello" },
      { type: "text_delta", text: " there!" },
      { type: "message_delta", stopReason: "end_turn" },
      { type: "usage", usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 0, reasoningTokens: 0 } },
      { type: "message_stop" }
    ])
  })

  it("decodes the docs/reference/openai-chat.md §5.5 parallel tool calls with their OpenAI index as the tool index", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), parseSse(OPENAI_TOOLS_STREAM))).toEqual([
      { type: "message_start", id: "chatcmpl-9Xb2", model: "gpt-4o-2024-08-06", created: 1735689700 },
      { type: "tool_call_start", index: 0, id: "call_W1", name: "get_weather" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{\"ci" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "ty\": \"Paris\"}" },
      { type: "tool_call_start", index: 1, id: "call_T2", name: "get_time" },
      { type: "tool_call_delta", index: 1, argumentsDelta: "{\"tz\": \"Europe/Paris\"}" },
      { type: "message_delta", stopReason: "tool_use" },
      { type: "usage", usage: { inputTokens: 95, outputTokens: 41 } },
      { type: "message_stop" }
    ])
  })

  it("emits a chunk's content before its finish when both come in one chunk", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [delta({ content: "All at once" }, "length"), DONE])).toEqual([
      messageStart,
      { type: "text_delta", text: "All at once" },
      { type: "message_delta", stopReason: "max_tokens" },
      { type: "message_stop" }
    ])
  })

  it("starts a tool call and sends its arguments when one fragment carries id, name and arguments", () => {
    const events = decodeAll(makeOpenAiChatStreamDecoder(), [
      delta({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] }),
      delta({}, "tool_calls"),
      DONE
    ])
    expect(events.slice(1, 3)).toEqual([
      { type: "tool_call_start", index: 0, id: "c1", name: "f" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{}" }
    ])
  })

  it("does not restart a tool call when a server repeats its id on later fragments", () => {
    const events = decodeAll(makeOpenAiChatStreamDecoder(), [
      delta({ tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 0, id: "c1", function: { arguments: "{\"a\":1}" } }] }),
      delta({}, "tool_calls"),
      DONE
    ])
    expect(events.filter((event) => event.type.startsWith("tool_call"))).toEqual([
      { type: "tool_call_start", index: 0, id: "c1", name: "f" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{\"a\":1}" }
    ])
  })

  it("reports tool_use when a compatible server finishes a tool call with stop", () => {
    const events = decodeAll(makeOpenAiChatStreamDecoder(), [
      delta({ tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: "{}" } }] }),
      delta({}, "stop"),
      DONE
    ])
    expect(events).toContainEqual({ type: "message_delta", stopReason: "tool_use" })
  })

  it("turns a refusal delta into refusal text and finishes with content_filter", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [delta({ refusal: "I can't help." }), delta({}, "stop"), DONE]))
      .toEqual([
        messageStart,
        { type: "text_delta", text: "I can't help.", refusal: true },
        { type: "message_delta", stopReason: "content_filter" },
        { type: "message_stop" }
      ])
  })

  it("reads usage carried on the finish chunk itself, after the finish", () => {
    const finishWithUsage = chunk({
      ...START,
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }
    })
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [finishWithUsage, DONE])).toEqual([
      messageStart,
      { type: "message_delta", stopReason: "end_turn" },
      { type: "usage", usage: { inputTokens: 5, outputTokens: 2 } },
      { type: "message_stop" }
    ])
  })

  it("ends normally at EOF without [DONE] once a finish_reason was seen", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [delta({ content: "x" }, "stop")]).at(-1)).toEqual({
      type: "message_stop"
    })
  })

  it("reports [DONE] without a finish_reason as a truncated stream, never a normal stop", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [delta({ content: "partial" }), DONE])).toEqual([
      messageStart,
      { type: "text_delta", text: "partial" },
      truncated
    ])
  })

  it("reports EOF without a finish_reason as a truncated stream", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [delta({ content: "partial" })]).at(-1)).toEqual(truncated)
  })

  it("reports an empty stream as truncated", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), [])).toEqual([truncated])
  })

  it("turns malformed JSON in a data line into an error event and ignores everything after it", () => {
    const decoder = makeOpenAiChatStreamDecoder()
    expect(decoder.push(delta({ content: "ok" }))).toHaveLength(2)
    expect(decoder.push({ data: "{\"id\":\"chatcmpl-1\",\"choices\":[" })).toEqual([
      { type: "error", error: { type: "server_error", message: "upstream sent a malformed stream chunk", status: 502, malformed: true } }
    ])
    expect(decoder.push(delta({ content: "late" }, "stop"))).toEqual([])
    expect(decoder.push(DONE)).toEqual([])
    expect(decoder.end()).toEqual([])
  })

  it("ignores events with empty data", () => {
    expect(makeOpenAiChatStreamDecoder().push({ data: "" })).toEqual([])
  })

  it("decodes the docs/reference/openai-chat.md §5.6 error chunk with the status its type stands for", () => {
    expect(decodeAll(makeOpenAiChatStreamDecoder(), parseSse(OPENAI_ERROR_STREAM))).toEqual([
      {
        type: "error",
        error: { type: "server_error", message: "The server had an error while processing your request.", status: 500 }
      }
    ])
  })

  it("infers 429 for a rate-limit error chunk and a numeric status from vLLM-style codes", () => {
    const rateLimited = makeOpenAiChatStreamDecoder().push(
      chunk({ error: { message: "slow down", type: "tokens", code: "rate_limit_exceeded" } })
    )
    expect(rateLimited).toEqual([{ type: "error", error: { type: "tokens", message: "slow down", status: 429, code: "rate_limit_exceeded" } }])
    const vllm = makeOpenAiChatStreamDecoder().push(
      chunk({ error: { object: "error", message: "bad", type: "BadRequestError", code: 400 } })
    )
    expect(vllm).toEqual([{ type: "error", error: { type: "BadRequestError", message: "bad", status: 400, code: undefined } }])
  })
})

describe("Chat Completions stream encoder", () => {
  const textEvents: Array<ChatStreamEvent> = [
    { type: "message_start", id: "msg_1", model: "claude-x", created: 42 },
    { type: "text_delta", text: "Hi" },
    { type: "message_delta", stopReason: "end_turn" },
    { type: "usage", usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 4, cacheWriteTokens: 3 } },
    { type: "message_stop" }
  ]
  const head = `{"id":"chatcmpl-msg_1","object":"chat.completion.chunk","created":42,"model":"claude-x","choices":`
  const frame = (deltaJson: string, finish = "null") =>
    `data: ${head}[{"index":0,"delta":${deltaJson},"logprobs":null,"finish_reason":${finish}}]}\n\n`

  it("sends role chunk, content, finish chunk and [DONE], and no usage chunk unless asked", () => {
    expect(encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: false }), textEvents)).toBe(
      frame(`{"role":"assistant","content":""}`) + frame(`{"content":"Hi"}`) + frame("{}", `"stop"`) +
        "data: [DONE]\n\n"
    )
  })

  it("sends the usage chunk with choices: [] between the finish chunk and [DONE] when asked", () => {
    expect(encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: true }), textEvents)).toBe(
      frame(`{"role":"assistant","content":""}`) + frame(`{"content":"Hi"}`) + frame("{}", `"stop"`) +
        `data: ${head}[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":3}}}\n\n` +
        "data: [DONE]\n\n"
    )
  })

  it("puts the usage chunk after the finish chunk even when usage arrived first", () => {
    const usageFirst = [textEvents[0], textEvents[1], textEvents[3], textEvents[2], textEvents[4]]
    expect(encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: true }), usageFirst)).toBe(
      encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: true }), textEvents)
    )
  })

  it("shows the configured model name instead of the upstream's", () => {
    const out = makeOpenAiChatStreamEncoder({ includeUsage: false, model: "my-alias" }).push(textEvents[0])
    expect(out).toBe(
      `data: {"id":"chatcmpl-msg_1","object":"chat.completion.chunk","created":42,"model":"my-alias","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`
    )
  })

  it("sends a tool call as an id/type/name chunk followed by argument chunks", () => {
    const out = encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: false }), [
      textEvents[0],
      { type: "tool_call_start", index: 0, id: "toolu_1", name: "get_weather" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{\"city\":" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "\"Paris\"}" },
      { type: "message_delta", stopReason: "tool_use" },
      { type: "message_stop" }
    ])
    expect(out).toBe(
      frame(`{"role":"assistant","content":""}`) +
        frame(`{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`) +
        frame(`{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":"}}]}`) +
        frame(`{"tool_calls":[{"index":0,"function":{"arguments":"\\"Paris\\"}"}}]}`) +
        frame("{}", `"tool_calls"`) +
        "data: [DONE]\n\n"
    )
  })

  it("maps every canonical stop reason to its finish_reason", () => {
    const finishOf = (stopReason: "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "content_filter" | "pause_turn") =>
      makeOpenAiChatStreamEncoder({ includeUsage: false }).push({ type: "message_delta", stopReason }).match(
        /"finish_reason":"(\w+)"/
      )?.[1]
    expect([
      finishOf("end_turn"),
      finishOf("stop_sequence"),
      finishOf("pause_turn"),
      finishOf("max_tokens"),
      finishOf("tool_use"),
      finishOf("content_filter")
    ]).toEqual(["stop", "stop", "stop", "length", "tool_calls", "content_filter"])
  })

  it("renders an error event as the caller's error frame and sends nothing after it", () => {
    const encoder = makeOpenAiChatStreamEncoder({ includeUsage: true })
    encoder.push(textEvents[0])
    expect(encoder.push({ type: "error", error: { type: "api_error", message: "Internal server error", status: 500 } }))
      .toBe(
        `data: {"error":{"message":"Internal server error","type":"api_error","param":null,"code":"upstream_error"}}\n\n`
      )
    expect(encoder.push({ type: "text_delta", text: "late" })).toBe("")
    expect(encoder.push({ type: "message_stop" })).toBe("")
  })

  it("renders message_stop without a prior finish as an error frame instead of [DONE]", () => {
    const out = encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: true }), [
      textEvents[0],
      textEvents[1],
      { type: "message_stop" }
    ])
    expect(out).toBe(
      frame(`{"role":"assistant","content":""}`) + frame(`{"content":"Hi"}`) +
        `data: {"error":{"message":"upstream stream ended before a finish reason","type":"api_error","param":null,"code":"upstream_error"}}\n\n`
    )
  })

  it("re-encodes a decoded OpenAI tool stream with the same deltas (same-family normalized path)", () => {
    const events = decodeAll(makeOpenAiChatStreamDecoder(), parseSse(OPENAI_TOOLS_STREAM))
    const decodedAgain = decodeAll(
      makeOpenAiChatStreamDecoder(),
      parseSse(encodeAll(makeOpenAiChatStreamEncoder({ includeUsage: true }), events))
    )
    // The only difference: the encoder always states `cached_tokens` (0 when unknown).
    expect(decodedAgain).toEqual(
      events.map((event) => event.type === "usage" ? { ...event, usage: { ...event.usage, cacheReadTokens: 0 } } : event)
    )
  })
})
