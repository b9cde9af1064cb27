import { describe, expect, it } from "vitest"
import { Anthropic, OpenAiChat } from "../../src/formats/index.ts"
import {
  ANTHROPIC_ERROR_STREAM,
  ANTHROPIC_FROM_OPENAI_TOOLS_STREAM,
  ANTHROPIC_TOOL_STREAM,
  OPENAI_ERROR_STREAM,
  OPENAI_FROM_ANTHROPIC_TOOL_STREAM,
  OPENAI_TEXT_STREAM,
  OPENAI_TOOLS_STREAM
} from "./goldens.ts"
import { decodeAll, encodeAll, parseSse } from "./sse.ts"

const anthropicToOpenAi = (sse: string, includeUsage: boolean): string =>
  encodeAll(
    OpenAiChat.makeOpenAiChatStreamEncoder({ includeUsage }),
    decodeAll(Anthropic.makeAnthropicStreamDecoder({ created: 1735690000 }), parseSse(sse))
  )

const openAiToAnthropic = (sse: string): string =>
  encodeAll(Anthropic.makeAnthropicStreamEncoder(), decodeAll(OpenAiChat.makeOpenAiChatStreamDecoder(), parseSse(sse)))

describe("cross-family stream goldens (docs/reference/translation.md §9, §10)", () => {
  it("an Anthropic text+tool stream becomes the §9 Chat chunks exactly, usage chunk included", () => {
    expect(anthropicToOpenAi(ANTHROPIC_TOOL_STREAM, true)).toBe(OPENAI_FROM_ANTHROPIC_TOOL_STREAM)
  })

  it("without include_usage the §9 output has no usage chunk and nothing else changes", () => {
    const withoutUsage = OPENAI_FROM_ANTHROPIC_TOOL_STREAM.replace(/data: \{[^\n]*"choices":\[\],"usage"[^\n]*\n\n/, "")
    expect(withoutUsage).not.toBe(OPENAI_FROM_ANTHROPIC_TOOL_STREAM)
    expect(anthropicToOpenAi(ANTHROPIC_TOOL_STREAM, false)).toBe(withoutUsage)
  })

  it("a two-tool Chat stream becomes the §10 Anthropic events exactly", () => {
    expect(openAiToAnthropic(OPENAI_TOOLS_STREAM)).toBe(ANTHROPIC_FROM_OPENAI_TOOLS_STREAM)
  })

  it("a Chat text stream becomes one text block, then message_delta with the real usage, then message_stop", () => {
    expect(openAiToAnthropic(OPENAI_TEXT_STREAM)).toBe(
      "event: message_start\n" +
        `data: {"type":"message_start","message":{"id":"msg_chatcmpl-9Xa1","type":"message","role":"assistant","model":"gpt-4o-2024-08-06","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}\n\n` +
        "event: content_block_start\n" +
        `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n` +
        "event: content_block_delta\n" +
        `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n` +
        "event: content_block_delta\n" +
        `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there!"}}\n\n` +
        "event: content_block_stop\n" +
        `data: {"type":"content_block_stop","index":0}\n\n` +
        "event: message_delta\n" +
        `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":12,"cache_read_input_tokens":0,"output_tokens":3}}\n\n` +
        "event: message_stop\n" +
        `data: {"type":"message_stop"}\n\n`
    )
  })

  it("an Anthropic overloaded_error mid-stream reaches a Chat caller as its own error frame with no [DONE]", () => {
    expect(anthropicToOpenAi(ANTHROPIC_ERROR_STREAM, true)).toBe(
      `data: {"error":{"message":"Overloaded","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}\n\n`
    )
  })

  it("a Chat server_error mid-stream reaches an Anthropic caller as event: error and no message_stop", () => {
    expect(openAiToAnthropic(OPENAI_ERROR_STREAM)).toBe(
      "event: error\n" +
        `data: {"type":"error","error":{"type":"api_error","message":"The server had an error while processing your request."}}\n\n`
    )
  })
})
