/** The response half of the GenAI span: the same from a canonical response and from a stream's summary, output capped at 64 KB. */
import { describe, expect, it } from "vitest"
import type { ChatResponse } from "../../../src/domain/index.ts"
import { responseAttributes, summaryOfResponse } from "../../../src/pipeline/telemetry/genai/response.ts"

const response: ChatResponse = {
  id: "msg_01",
  model: "claude-sonnet-4-5-20250929",
  created: 0,
  content: [{ type: "text", text: "Checking." }, { type: "tool_call", id: "toolu_1", name: "lookup", arguments: "{\"q\":\"x\"}" }],
  stopReason: "tool_use",
  usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 40 }
}

describe("GenAI response attributes", () => {
  it("a complete response and the summary a stream leaves give the same attributes", () => {
    const fromResponse = responseAttributes(summaryOfResponse(response), { captureContent: true, failed: false })
    const fromStream = responseAttributes({
      id: "msg_01",
      model: "claude-sonnet-4-5-20250929",
      stopReason: "tool_use",
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 40 },
      text: "Checking.",
      toolCalls: [{ id: "toolu_1", name: "lookup", arguments: "{\"q\":\"x\"}" }]
    }, { captureContent: true, failed: false })
    expect(fromStream).toEqual(fromResponse)
    expect(fromResponse).toMatchObject({
      "gen_ai.response.id": "msg_01",
      "gen_ai.response.model": "claude-sonnet-4-5-20250929",
      "gen_ai.response.finish_reasons": ["tool_call"],
      "gen_ai.usage.input_tokens": 100,
      "gen_ai.usage.output_tokens": 20,
      "gen_ai.usage.cache_read.input_tokens": 40
    })
  })

  it("a stream that broke after some text says so in its output message", () => {
    const attributes = responseAttributes({ model: "gpt-4o", text: "Partial ans" }, { captureContent: true, failed: true })
    expect(JSON.parse(attributes["gen_ai.output.messages"] as string)).toEqual([{ role: "assistant", parts: [{ type: "text", content: "Partial ans" }], finish_reason: "error" }])
  })

  it("output over 64 KB is cut to fit, valid JSON, and flagged", () => {
    const attributes = responseAttributes({ model: "gpt-4o", stopReason: "max_tokens", text: "é".repeat(40_000) }, { captureContent: true, failed: false })
    const output = attributes["gen_ai.output.messages"] as string
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(64 * 1024)
    const [message] = JSON.parse(output) as Array<{ parts: Array<{ content: string }>; finish_reason: string }>
    expect(message.finish_reason).toBe("length")
    expect(message.parts[0].content.endsWith("…")).toBe(true)
    expect(attributes["gateway.genai.content_truncated"]).toBe(true)
  })

  it("without content capture only the facts are kept", () => {
    const attributes = responseAttributes(summaryOfResponse(response), { captureContent: false, failed: false })
    expect(attributes["gen_ai.output.messages"]).toBeUndefined()
    expect(JSON.stringify(attributes)).not.toContain("Checking")
  })
})

describe("captured content JSON", () => {
  it("is what JSON.stringify writes, whatever the parts", async () => {
    const { capJson } = await import("../../../src/pipeline/telemetry/genai/messages.ts")
    const cases: ReadonlyArray<ReadonlyArray<unknown>> = [
      [],
      [{ type: "text", content: "system \"quoted\" \n é 𝄞 \u0000" }],
      [{ role: "user", parts: [{ type: "text", content: "hello" }] }, { role: "assistant", parts: [{ type: "text", content: "" }, { type: "text", content: "two" }] }],
      [{ role: "assistant", parts: [{ type: "text", content: "done" }], finish_reason: "stop" }],
      [{ role: "assistant", parts: [], finish_reason: "error" }],
      [{ role: "user", parts: [{ type: "blob", modality: "image", mime_type: "image/png" }] }],
      [{ role: "assistant", parts: [{ type: "tool_call", id: "c", name: "f", arguments: { a: [1, 2] } }], finish_reason: "tool_call" }],
      [{ parts: [{ type: "text", content: "order" }], role: "user" }],
      [{ role: "user", parts: [{ type: "text", content: "x", extra: true }] }],
      [{ type: "text", content: 5 }]
    ]
    for (const value of cases) expect(capJson(value).json).toBe(JSON.stringify(value))
  })
  it("an answer of text alone is written as JSON.stringify writes its output messages", async () => {
    const { outputMessagesOf, textOutputJson } = await import("../../../src/pipeline/telemetry/genai/messages.ts")
    const cases = [
      { text: "done", stopReason: "end_turn" as const },
      { text: "cut \"quoted\" \n é 𝄞 \u0000", stopReason: "max_tokens" as const },
      { text: "", stopReason: "end_turn" as const },
      { text: undefined },
      { text: "partial", failed: true },
      { text: "x", toolCalls: [] }
    ]
    for (const output of cases) expect(textOutputJson(output)).toBe(JSON.stringify(outputMessagesOf(output)))
    expect(textOutputJson({ text: "x", toolCalls: [{ id: "c", name: "f", arguments: "{}" }] })).toBeUndefined()
  })
})
