/**
 * The Bedrock Converse family and Amazon's binary event stream: request
 * encoding (roles, tool results first, media, structured output as a forced
 * tool), response and stream decoding through the event-stream framer, and
 * broken input: a cut stream, a corrupted frame, an exception, names that are
 * prototype keys.
 */
import { Result } from "effect"
import { beforeAll, describe, expect, it } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { classifyUpstream, classifyStreamError } from "../../src/domain/errors.ts"
import { Bedrock } from "../../src/formats/index.ts"
import { framerFor, loadEventStreamCodec } from "../../src/providers/framing.ts"
import { chatRequest } from "./chat-request.ts"
import { bedrockFrame, converseFrames } from "../fixtures/bedrock.ts"

const { encodeBedrockRequest, decodeBedrockResponse, makeBedrockStreamDecoder, JSON_TOOL } = Bedrock

const request = chatRequest

// A gateway loads the codec when it compiles a Bedrock provider; this file uses the framer alone.
beforeAll(() => loadEventStreamCodec())

/** Bytes through the event-stream framer and the stream decoder, as the normalized path runs them. */
const decodeBytes = (chunks: ReadonlyArray<Uint8Array>): Array<ChatStreamEvent> => {
  const framer = framerFor("aws-eventstream")
  const decoder = makeBedrockStreamDecoder()
  const out: Array<ChatStreamEvent> = []
  for (const chunk of chunks) for (const event of framer.push(chunk)) out.push(...decoder.push(event))
  for (const event of framer.end()) out.push(...decoder.push(event))
  out.push(...decoder.end())
  return out
}

describe("Bedrock request encoding", () => {
  it("starts with a user turn, merges roles, puts tool results first and reports what Converse cannot take", () => {
    const { body, dropped } = encodeBedrockRequest(
      request({
        messages: [
          { role: "assistant", content: [{ type: "tool_call", id: "t1", name: "f", arguments: "{\"a\":1}" }] },
          { role: "user", content: [{ type: "text", text: "and" }, { type: "tool_result", toolCallId: "t1", content: [{ type: "text", text: "ok" }], isError: true }] },
          { role: "user", content: [{ type: "image", source: { kind: "url", url: "https://example.invalid/x.png" } }] }
        ],
        toolChoice: { type: "none" },
        tools: [{ name: "f", parameters: {} }],
        user: "u"
      }),
      { model: "m" }
    )
    expect(body.messages).toEqual([
      { role: "user", content: [{ text: "." }] },
      { role: "assistant", content: [{ toolUse: { toolUseId: "t1", name: "f", input: { a: 1 } } }] },
      { role: "user", content: [{ toolResult: { toolUseId: "t1", content: [{ text: "ok" }], status: "error" } }, { text: "and" }] }
    ])
    expect(body.toolConfig).toEqual({ tools: [{ toolSpec: { name: "f", inputSchema: { json: { type: "object", properties: {} } } } }] })
    expect(dropped).toEqual(["messages[].image_url", "tool_choice", "user"])
  })

  it("a JSON response format is a forced tool, and its call decodes back to the JSON text with an end_turn finish", () => {
    const { body } = encodeBedrockRequest(request({ responseFormat: { type: "json_object" } }), { model: "m" })
    expect(body.toolConfig).toMatchObject({ toolChoice: { tool: { name: JSON_TOOL } } })
    const decoded = Result.getOrThrow(decodeBedrockResponse({
      output: { message: { role: "assistant", content: [{ toolUse: { toolUseId: "x", name: JSON_TOOL, input: { a: 1 } } }] } },
      stopReason: "tool_use",
      usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 }
    }))
    expect(decoded.content).toEqual([{ type: "text", text: "{\"a\":1}" }])
    expect(decoded.stopReason).toBe("end_turn")
  })
})

describe("Bedrock stream decoding through the event-stream framer", () => {
  it("a guardrail that let nothing through is the content_policy error, whole or streamed; after content it is the content_filter finish", () => {
    const whole = decodeBedrockResponse({ output: { message: { role: "assistant", content: [] } }, stopReason: "guardrail_intervened", usage: { inputTokens: 1, outputTokens: 0 } })
    expect(Result.isFailure(whole) ? whole.failure.reported : undefined).toMatchObject({ type: "content_policy", code: "guardrail_intervened", status: 400 })
    const canned = decodeBedrockResponse({ output: { message: { role: "assistant", content: [{ text: "Sorry, I cannot help with that." }] } }, stopReason: "guardrail_intervened" })
    expect(Result.getOrThrow(canned).stopReason).toBe("content_filter")
    const streamed = decodeBytes(converseFrames({ blocks: [], stopReason: "content_filtered", usage: { inputTokens: 1, outputTokens: 0, totalTokens: 1 } }))
    expect(streamed.slice(1)).toEqual([{ type: "error", error: expect.objectContaining({ type: "content_policy", code: "content_filtered", status: 400 }) }])
    const after = decodeBytes(converseFrames({ blocks: [{ text: "Partly" }], stopReason: "guardrail_intervened", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }))
    expect(after.find((e) => e.type === "message_delta")).toEqual({ type: "message_delta", stopReason: "content_filter" })
  })

  it("decodes a ConverseStream answer split at arbitrary byte boundaries", () => {
    const bytes = Buffer.concat(converseFrames({
      blocks: [{ text: "Hello there" }, { toolUse: { toolUseId: "tu1", name: "f", input: { x: 1 } } }],
      stopReason: "tool_use",
      usage: { inputTokens: 4, outputTokens: 5, totalTokens: 9 }
    }))
    const chunks = [bytes.subarray(0, 7), bytes.subarray(7, 100), bytes.subarray(100)]
    const events = decodeBytes(chunks)
    expect(events.map((e) => e.type)).toEqual([
      "message_start", "text_delta", "text_delta", "tool_call_start", "tool_call_delta", "tool_call_delta", "message_delta", "usage", "message_stop"
    ])
    expect(events.at(-3)).toEqual({ type: "message_delta", stopReason: "tool_use" })
  })

  it("a stream cut before messageStop, a corrupted frame and an exception each end in an error", () => {
    expect(decodeBytes([bedrockFrame("messageStart", { role: "assistant" })]).at(-1)).toMatchObject({ type: "error", error: { malformed: true } })
    const frame = bedrockFrame("messageStart", { role: "assistant" })
    frame[frame.length - 1] ^= 0xff // the message CRC no longer matches
    expect(decodeBytes([frame]).at(-1)).toMatchObject({ type: "error", error: { type: "internalServerException", status: 500 } })
    const throttled = decodeBytes([bedrockFrame("throttlingException", { message: "slow" }, "exception")])
    expect(throttled).toEqual([{ type: "error", error: { type: "throttlingException", code: "throttlingException", message: "slow", status: 429 } }])
    expect(classifyStreamError((throttled[0] as Extract<ChatStreamEvent, { type: "error" }>).error)).toBe("rate_limit")
  })

  it("upstream names that are prototype keys are not classes or reasons", () => {
    expect(classifyUpstream(400, { type: "constructor" })).toBe("bad_request")
    expect(Bedrock.stopReasonOfWire("toString")).toBe("end_turn")
  })
})
