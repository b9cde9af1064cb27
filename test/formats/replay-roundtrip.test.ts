/**
 * Assembly and replay against the real stream decoders and encoders: a
 * recorded upstream stream assembles into its final answer, and an answer
 * replayed, encoded in either wire family, decoded back and assembled again
 * is the same answer. This is how a streamed answer is cached and served.
 */
import { describe, expect, it } from "vitest"
import type { ChatResponse, ChatStreamEvent } from "../../src/domain/index.ts"
import { Anthropic, OpenAiChat, ResponseAssembler, responseEvents } from "../../src/formats/index.ts"
import { ANTHROPIC_ERROR_STREAM, ANTHROPIC_TOOL_STREAM, OPENAI_TOOLS_STREAM } from "./goldens.ts"
import { decodeAll, encodeAll, parseSse } from "./sse.ts"

const assemble = (events: ReadonlyArray<ChatStreamEvent>, limit = 1 << 20): ChatResponse | undefined => {
  const assembler = new ResponseAssembler(limit)
  for (const event of events) assembler.event(event)
  return assembler.result()
}

/** What a caller can see of an answer (ids are reshaped per family: `chatcmpl-…`, `msg_…`). */
const visible = (response: ChatResponse | undefined) =>
  response === undefined ? undefined : { model: response.model, content: response.content, stopReason: response.stopReason, stopSequence: response.stopSequence, usage: response.usage }

const FAMILIES = {
  openai: {
    encoder: () => OpenAiChat.makeOpenAiChatStreamEncoder({ includeUsage: true }),
    decoder: () => OpenAiChat.makeOpenAiChatStreamDecoder()
  },
  anthropic: {
    encoder: () => Anthropic.makeAnthropicStreamEncoder(),
    decoder: () => Anthropic.makeAnthropicStreamDecoder()
  }
}

const ANSWER: ChatResponse = {
  id: "msg_roundtrip",
  model: "some-model",
  created: 1_700_000_000,
  content: [
    { type: "text", text: "Checking both. Ünïcödé and emoji 🌦 survive." },
    { type: "tool_call", id: "call_a", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
    { type: "tool_call", id: "call_b", name: "get_time", arguments: "{\"tz\":\"Europe/Paris\"}" }
  ],
  stopReason: "tool_use",
  usage: { inputTokens: 95, outputTokens: 41, cacheReadTokens: 20 }
}

describe("recorded upstream streams assemble into their final answer", () => {
  it("Anthropic text then tool_use (docs/reference/anthropic-messages.md §5.4)", () => {
    const answer = assemble(decodeAll(Anthropic.makeAnthropicStreamDecoder(), parseSse(ANTHROPIC_TOOL_STREAM)))
    expect(answer).toMatchObject({
      id: "msg_014p7gG3wDgGV9EUtLvnow3U",
      model: "claude-sonnet-4-5-20250929",
      content: [
        { type: "text", text: "Let me check that." },
        { type: "tool_call", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather", arguments: "{\"city\": \"Paris\"}" }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 472, outputTokens: 89 }
    })
  })

  it("Chat Completions with two tool calls and the usage chunk", () => {
    const answer = assemble(decodeAll(OpenAiChat.makeOpenAiChatStreamDecoder(), parseSse(OPENAI_TOOLS_STREAM)))
    expect(answer).toEqual({
      id: "chatcmpl-9Xb2",
      model: "gpt-4o-2024-08-06",
      created: 1735689700,
      content: [
        { type: "tool_call", id: "call_W1", name: "get_weather", arguments: "{\"city\": \"Paris\"}" },
        { type: "tool_call", id: "call_T2", name: "get_time", arguments: "{\"tz\": \"Europe/Paris\"}" }
      ],
      stopReason: "tool_use",
      stopSequence: undefined,
      usage: { inputTokens: 95, outputTokens: 41 }
    })
  })

  it("a stream that ended in an error, or was cut before its end, assembles into nothing", () => {
    expect(assemble(decodeAll(Anthropic.makeAnthropicStreamDecoder(), parseSse(ANTHROPIC_ERROR_STREAM)))).toBeUndefined()
    const cut = OPENAI_TOOLS_STREAM.slice(0, OPENAI_TOOLS_STREAM.indexOf("data: [DONE]"))
    const withoutFinish = cut.split("\n\n").filter((frame) => !frame.includes("finish_reason\":\"tool_calls")).join("\n\n")
    expect(assemble(decodeAll(OpenAiChat.makeOpenAiChatStreamDecoder(), parseSse(withoutFinish)))).toBeUndefined()
  })
})

describe("replay, encode, decode, assemble: the same answer", () => {
  it.each(Object.keys(FAMILIES) as Array<keyof typeof FAMILIES>)("through the %s wire", (family) => {
    const { encoder, decoder } = FAMILIES[family]
    const sse = encodeAll(encoder(), responseEvents(ANSWER))
    expect(visible(assemble(decodeAll(decoder(), parseSse(sse))))).toEqual(visible(ANSWER))
  })

  it("a stop sequence survives the Anthropic wire", () => {
    const answer: ChatResponse = { ...ANSWER, content: [{ type: "text", text: "1, 2, 3" }], stopReason: "stop_sequence", stopSequence: "4" }
    const sse = encodeAll(Anthropic.makeAnthropicStreamEncoder(), responseEvents(answer))
    expect(visible(assemble(decodeAll(Anthropic.makeAnthropicStreamDecoder(), parseSse(sse))))).toEqual(visible(answer))
  })

  it("an answer past the assembler's bound is given up (too big to keep)", () => {
    const events = responseEvents(ANSWER)
    expect(assemble(events, 30)).toBeUndefined()
    expect(assemble(events, 200)).toBeDefined()
  })
})
