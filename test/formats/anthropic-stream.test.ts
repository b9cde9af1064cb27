import { describe, expect, it } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { Anthropic } from "../../src/formats/index.ts"
import { ANTHROPIC_ERROR_STREAM, ANTHROPIC_TEXT_STREAM, ANTHROPIC_TOOL_STREAM } from "./goldens.ts"
import { anthropicEvent, decodeAll, encodeAll, parseSse } from "./sse.ts"

const { makeAnthropicStreamDecoder, makeAnthropicStreamEncoder } = Anthropic

const decoder = () => makeAnthropicStreamDecoder({ created: 7 })

const start = (usage: Record<string, number> = { input_tokens: 10, output_tokens: 1 }) =>
  anthropicEvent({
    type: "message_start",
    message: { id: "msg_1", type: "message", role: "assistant", model: "claude-x", content: [], usage }
  })
const blockStart = (index: number, block: Record<string, unknown>) =>
  anthropicEvent({ type: "content_block_start", index, content_block: block })
const blockDelta = (index: number, delta: Record<string, unknown>) =>
  anthropicEvent({ type: "content_block_delta", index, delta })
const blockStop = (index: number) => anthropicEvent({ type: "content_block_stop", index })
const messageDelta = (stopReason: string | null, usage: Record<string, number> = { output_tokens: 5 }) =>
  anthropicEvent({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage })
const messageStop = anthropicEvent({ type: "message_stop" })

const started: ChatStreamEvent = {
  type: "message_start",
  id: "msg_1",
  model: "claude-x",
  created: 7,
  usage: { inputTokens: 10, outputTokens: 1 }
}
const truncated: ChatStreamEvent = {
  type: "error",
  error: { type: "api_error", message: "upstream stream ended before message_stop", status: 502, malformed: true }
}

describe("Messages stream decoder", () => {
  it("decodes the docs/reference/anthropic-messages.md §5.3 text stream, ignoring ping, with input usage up front", () => {
    const usage = { inputTokens: 21, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 }
    expect(decodeAll(decoder(), parseSse(ANTHROPIC_TEXT_STREAM))).toEqual([
      { type: "message_start", id: "msg_01XFDUDYJgAACzvnptvVoYEL", model: "claude-sonnet-4-5-20250929", created: 7, usage },
      { type: "text_delta", text: "Hello" },
      { type: "text_delta", text: " there!" },
      { type: "message_delta", stopReason: "end_turn" },
      { type: "usage", usage: { ...usage, outputTokens: 6 } },
      { type: "message_stop" }
    ])
  })

  it("numbers tool calls by a running tool count, not the block index, and skips empty partial_json", () => {
    const events = decodeAll(decoder(), parseSse(ANTHROPIC_TOOL_STREAM))
    expect(events.slice(1, -3)).toEqual([
      { type: "text_delta", text: "Let me check that." },
      { type: "tool_call_start", index: 0, id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{\"city\": \"Pa" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "ris\"}" }
    ])
    expect(events.at(-3)).toEqual({ type: "message_delta", stopReason: "tool_use" })
  })

  it("carries thinking text and its signature, and redacted thinking's data, as reasoning; reports server-tool blocks as other content, drops citation deltas", () => {
    const events = decodeAll(decoder(), [
      start(),
      blockStart(0, { type: "thinking", thinking: "", signature: "" }),
      blockDelta(0, { type: "thinking_delta", thinking: "hmm" }),
      blockDelta(0, { type: "signature_delta", signature: "EqQB" }),
      blockStop(0),
      blockStart(1, { type: "redacted_thinking", data: "opaque" }),
      blockStop(1),
      blockStart(2, { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] }),
      blockStop(2),
      blockStart(3, { type: "text", text: "" }),
      blockDelta(3, { type: "citations_delta", citation: { cited_text: "x" } }),
      blockDelta(3, { type: "text_delta", text: "Answer" }),
      blockStop(3),
      blockStart(4, { type: "tool_use", id: "toolu_1", name: "f", input: {} }),
      blockDelta(4, { type: "input_json_delta", partial_json: "{}" }),
      blockStop(4),
      messageDelta("tool_use"),
      messageStop
    ])
    expect(events).toEqual([
      started,
      { type: "reasoning_delta", text: "" },
      { type: "reasoning_delta", text: "hmm" },
      { type: "reasoning_signature", signature: "EqQB" },
      { type: "reasoning_redacted", data: "opaque" },
      { type: "other_content", kind: "web_search_tool_result" },
      { type: "text_delta", text: "Answer" },
      { type: "tool_call_start", index: 0, id: "toolu_1", name: "f" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{}" },
      { type: "message_delta", stopReason: "tool_use" },
      { type: "usage", usage: { inputTokens: 10, outputTokens: 5 } },
      { type: "message_stop" }
    ])
  })

  it("sends initial text of a text block start as a text delta", () => {
    expect(decoder().push(blockStart(0, { type: "text", text: "Hi" }))).toEqual([{ type: "text_delta", text: "Hi" }])
  })

  it("adds cache reads and writes into input usage and lets message_delta override non-null input fields", () => {
    const events = decodeAll(decoder(), [
      start({ input_tokens: 10, cache_creation_input_tokens: 20, cache_read_input_tokens: 30, output_tokens: 1 }),
      messageDelta("end_turn", { input_tokens: 12, output_tokens: 50 }),
      messageStop
    ])
    expect(events[0]).toEqual({
      ...started,
      usage: { inputTokens: 60, outputTokens: 1, cacheWriteTokens: 20, cacheReadTokens: 30 }
    })
    expect(events[2]).toEqual({
      type: "usage",
      usage: { inputTokens: 62, outputTokens: 50, cacheWriteTokens: 20, cacheReadTokens: 30 }
    })
  })

  it("maps refusal to content_filter, model_context_window_exceeded to max_tokens and keeps the stop sequence", () => {
    const stopOf = (reason: string, sequence: string | null = null) =>
      decoder().push(
        anthropicEvent({ type: "message_delta", delta: { stop_reason: reason, stop_sequence: sequence }, usage: {} })
      )[0]
    expect(stopOf("refusal")).toEqual({ type: "message_delta", stopReason: "content_filter" })
    expect(stopOf("model_context_window_exceeded")).toEqual({ type: "message_delta", stopReason: "max_tokens" })
    expect(stopOf("pause_turn")).toEqual({ type: "message_delta", stopReason: "pause_turn" })
    expect(stopOf("stop_sequence", "END")).toEqual({
      type: "message_delta",
      stopReason: "stop_sequence",
      stopSequence: "END"
    })
  })

  it("decodes the docs/reference/anthropic-messages.md §5.5 error event with the status its type stands for", () => {
    expect(decodeAll(decoder(), parseSse(ANTHROPIC_ERROR_STREAM))).toEqual([
      { type: "error", error: { type: "overloaded_error", message: "Overloaded", status: 529 } }
    ])
  })

  it("reports message_stop without a stop reason as a truncated stream", () => {
    expect(decodeAll(decoder(), [start(), messageStop])).toEqual([started, truncated])
  })

  it("reports EOF before message_stop as a truncated stream even after the finish", () => {
    expect(decodeAll(decoder(), [start(), messageDelta("end_turn")]).at(-1)).toEqual(truncated)
  })

  it("turns malformed JSON into an error event and ignores everything after it", () => {
    const d = decoder()
    expect(d.push({ event: "content_block_delta", data: "{\"type\":\"content_block_delta\"," })).toEqual([
      { type: "error", error: { type: "api_error", message: "upstream sent a malformed stream event", status: 502, malformed: true } }
    ])
    expect(d.push(messageStop)).toEqual([])
    expect(d.end()).toEqual([])
  })

  it("ignores ping and unknown event types", () => {
    const d = decoder()
    expect(d.push({ event: "ping", data: "{\"type\": \"ping\"}" })).toEqual([])
    expect(d.push(anthropicEvent({ type: "future_event", x: 1 }))).toEqual([])
  })
})

describe("Messages stream encoder", () => {
  const messageStart = (usage = `{"input_tokens":0,"output_tokens":0}`, id = "msg_chatcmpl-1", model = "gpt-x") =>
    `event: message_start\ndata: {"type":"message_start","message":{"id":"${id}","type":"message","role":"assistant","model":"${model}","content":[],"stop_reason":null,"stop_sequence":null,"usage":${usage}}}\n\n`
  const textStart = (index: number) =>
    `event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":{"type":"text","text":""}}\n\n`
  const textDelta = (index: number, text: string) =>
    `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${
      JSON.stringify(text)
    }}}\n\n`
  const toolStart = (index: number, id: string, name: string) =>
    `event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":{"type":"tool_use","id":"${id}","name":"${name}","input":{}}}\n\n`
  const inputDelta = (index: number, json: string) =>
    `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":${
      JSON.stringify(json)
    }}}\n\n`
  const stop = (index: number) =>
    `event: content_block_stop\ndata: {"type":"content_block_stop","index":${index}}\n\n`
  const finish = (reason: string, usage: string) =>
    `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"${reason}","stop_sequence":null},"usage":${usage}}\n\n`
  const MESSAGE_STOP = `event: message_stop\ndata: {"type":"message_stop"}\n\n`
  const open: ChatStreamEvent = { type: "message_start", id: "chatcmpl-1", model: "gpt-x", created: 1 }
  const usage: ChatStreamEvent = { type: "usage", usage: { inputTokens: 9, outputTokens: 4 } }

  it("keeps interleaved tool-call fragments in order: the first call live, the others whole after it", () => {
    const out = encodeAll(makeAnthropicStreamEncoder(), [
      open,
      { type: "tool_call_start", index: 0, id: "call_A", name: "a" },
      { type: "tool_call_start", index: 1, id: "call_B", name: "b" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{\"x\":" },
      { type: "tool_call_delta", index: 1, argumentsDelta: "{\"y\":" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "1}" },
      { type: "tool_call_delta", index: 1, argumentsDelta: "2}" },
      { type: "message_delta", stopReason: "tool_use" },
      usage,
      { type: "message_stop" }
    ])
    expect(out).toBe(
      messageStart() +
        toolStart(0, "call_A", "a") + inputDelta(0, "{\"x\":") + inputDelta(0, "1}") + stop(0) +
        toolStart(1, "call_B", "b") + inputDelta(1, "{\"y\":2}") + stop(1) +
        finish("tool_use", `{"input_tokens":9,"output_tokens":4}`) + MESSAGE_STOP
    )
  })

  it("closes a tool block before text that follows it and gives the text the next block index", () => {
    const out = encodeAll(makeAnthropicStreamEncoder(), [
      open,
      { type: "text_delta", text: "Checking." },
      { type: "tool_call_start", index: 0, id: "call_A", name: "a" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{}" },
      { type: "text_delta", text: "Done." },
      { type: "message_delta", stopReason: "end_turn" },
      usage,
      { type: "message_stop" }
    ])
    expect(out).toBe(
      messageStart() +
        textStart(0) + textDelta(0, "Checking.") + stop(0) +
        toolStart(1, "call_A", "a") + inputDelta(1, "{}") + stop(1) +
        textStart(2) + textDelta(2, "Done.") + stop(2) +
        finish("end_turn", `{"input_tokens":9,"output_tokens":4}`) + MESSAGE_STOP
    )
  })

  it("sends message_delta at the finish when usage arrived before it", () => {
    const out = encodeAll(makeAnthropicStreamEncoder(), [
      open,
      { type: "text_delta", text: "x" },
      usage,
      { type: "message_delta", stopReason: "max_tokens" },
      { type: "message_stop" }
    ])
    expect(out).toBe(
      messageStart() + textStart(0) + textDelta(0, "x") + stop(0) +
        finish("max_tokens", `{"input_tokens":9,"output_tokens":4}`) + MESSAGE_STOP
    )
  })

  it("sends the held finish with zero usage at message_stop when usage never arrived", () => {
    const out = encodeAll(makeAnthropicStreamEncoder(), [
      open,
      { type: "text_delta", text: "x" },
      { type: "message_delta", stopReason: "end_turn" },
      { type: "message_stop" }
    ])
    expect(out).toBe(
      messageStart() + textStart(0) + textDelta(0, "x") + stop(0) +
        finish("end_turn", `{"input_tokens":0,"output_tokens":0}`) + MESSAGE_STOP
    )
  })

  it("carries known input usage in message_start and subtracts cached tokens from input_tokens", () => {
    const out = encodeAll(makeAnthropicStreamEncoder({ model: "alias" }), [
      { type: "message_start", id: "msg_9", model: "claude-x", created: 1, usage: { inputTokens: 60, outputTokens: 1, cacheReadTokens: 30, cacheWriteTokens: 20 } },
      { type: "text_delta", text: "x" },
      { type: "message_delta", stopReason: "end_turn" },
      { type: "usage", usage: { inputTokens: 60, outputTokens: 7, cacheReadTokens: 30, cacheWriteTokens: 20 } },
      { type: "message_stop" }
    ])
    const wireUsage = (output: number) =>
      `{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":${output}}`
    expect(out).toBe(
      messageStart(wireUsage(1), "msg_9", "alias") + textStart(0) + textDelta(0, "x") + stop(0) +
        finish("end_turn", wireUsage(7)) + MESSAGE_STOP
    )
  })

  it("cleans tool ids to [a-zA-Z0-9_-]", () => {
    const out = makeAnthropicStreamEncoder().push({ type: "tool_call_start", index: 0, id: "functions.Bash:0", name: "Bash" })
    expect(out).toContain(`"id":"functions_Bash_0"`)
  })

  it("reports content_filter as stop_reason refusal", () => {
    const out = encodeAll(makeAnthropicStreamEncoder(), [
      open,
      { type: "message_delta", stopReason: "content_filter" },
      usage
    ])
    expect(out).toContain(`"stop_reason":"refusal"`)
  })

  it("turns message_stop without a finish into event: error and never sends message_stop", () => {
    const out = encodeAll(makeAnthropicStreamEncoder(), [open, { type: "text_delta", text: "x" }, { type: "message_stop" }])
    expect(out).toBe(
      messageStart() + textStart(0) + textDelta(0, "x") +
        `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream stream ended before a stop reason"}}\n\n`
    )
  })

  it("maps an upstream error to the caller's type and sends nothing after it", () => {
    const encoder = makeAnthropicStreamEncoder()
    encoder.push(open)
    expect(encoder.push({ type: "error", error: { type: "tokens", message: "Rate limit reached", status: 429 } })).toBe(
      `event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}\n\n`
    )
    expect(encoder.push({ type: "message_delta", stopReason: "end_turn" })).toBe("")
    expect(encoder.push({ type: "message_stop" })).toBe("")
  })

  it("opens a well-formed message when the upstream skipped message_start", () => {
    expect(makeAnthropicStreamEncoder().push({ type: "text_delta", text: "x" })).toBe(
      messageStart(`{"input_tokens":0,"output_tokens":0}`, "msg_", "") + textStart(0) + textDelta(0, "x")
    )
  })
})
