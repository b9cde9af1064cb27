/**
 * The Gemini family against the canonical model: request encoding (roles,
 * signatures, media, tools, schemas, thinking), response and stream decoding
 * (thought parts, signatures, finish reasons, usage), and broken input: a
 * stream cut before its finish, an event that is not JSON, an error event.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { Gemini } from "../../src/formats/index.ts"
import { chatRequest } from "./chat-request.ts"
import { chunk, decodeAll } from "./sse.ts"

const { encodeGeminiRequest, decodeGeminiResponse, makeGeminiStreamDecoder, splitToolCallId, toolCallIdOf, geminiSchema } = Gemini

const request = chatRequest

describe("Gemini request encoding", () => {
  it("merges turns of one role, maps roles to user/model, drops empty text and reports fields Gemini has no place for", () => {
    const { body, dropped } = encodeGeminiRequest(
      request({
        system: [{ type: "text", text: "sys" }],
        messages: [
          { role: "user", content: [{ type: "text", text: "a" }] },
          { role: "user", content: [{ type: "text", text: "" }, { type: "text", text: "b" }] },
          { role: "assistant", content: [{ type: "text", text: "c" }] }
        ],
        user: "u-1",
        unmapped: { seed: 3 }
      }),
      { model: "gemini-x", callerFamily: "openai" }
    )
    expect(body).toEqual({
      contents: [{ role: "user", parts: [{ text: "a" }, { text: "b" }] }, { role: "model", parts: [{ text: "c" }] }],
      systemInstruction: { parts: [{ text: "sys" }] }
    })
    expect(dropped).toEqual(["user", "seed"])
  })

  it("puts a reasoning part's signature on the part after it, and a tool call's signature (carried in its id) on the call", () => {
    const id = toolCallIdOf(undefined, "c2lnbmF0dXJlKy8=")
    expect(id).toMatch(/^call_[a-f0-9]{24}__thought__c2lnbmF0dXJlKy8$/)
    expect(splitToolCallId(id).signature).toBe("c2lnbmF0dXJlKy8=")
    const { body } = encodeGeminiRequest(
      request({
        messages: [
          { role: "user", content: [{ type: "text", text: "q" }] },
          {
            role: "assistant",
            content: [
              { type: "reasoning", text: "thought", signature: "sig-text" },
              { type: "text", text: "answer" },
              { type: "tool_call", id, name: "f", arguments: "{\"a\":1}" }
            ]
          },
          { role: "user", content: [{ type: "tool_result", toolCallId: id, content: [{ type: "text", text: "oops" }], isError: true }] }
        ]
      }),
      { model: "g" }
    )
    expect((body.contents as Array<unknown>).slice(1)).toEqual([
      { role: "model", parts: [{ text: "answer", thoughtSignature: "sig-text" }, { functionCall: { name: "f", args: { a: 1 } }, thoughtSignature: "c2lnbmF0dXJlKy8=" }] },
      { role: "user", parts: [{ functionResponse: { name: "f", response: { error: "oops" } } }] }
    ])
  })

  it("maps generation settings, JSON output and thinking (an Anthropic caller's budget included)", () => {
    const { body, dropped } = encodeGeminiRequest(
      request({
        maxTokens: 10,
        temperature: 0.2,
        topP: 0.9,
        topK: 5,
        stop: ["END", ""],
        responseFormat: { type: "json_object" },
        unmapped: { thinking: { type: "enabled", budget_tokens: 2000 } }
      }),
      { model: "g", callerFamily: "anthropic" }
    )
    expect(body.generationConfig).toEqual({
      maxOutputTokens: 10,
      temperature: 0.2,
      topP: 0.9,
      topK: 5,
      stopSequences: ["END"],
      responseMimeType: "application/json",
      thinkingConfig: { thinkingBudget: 2000, includeThoughts: true }
    })
    expect(dropped).toEqual([])
  })

  it("adapts schemas to Gemini's subset and reports only what changes their meaning", () => {
    const dropped: Array<string> = []
    const schema = geminiSchema(
      {
        type: "object",
        definitions: { node: { type: "object", properties: { next: { $ref: "#/definitions/node" } } } },
        properties: { root: { $ref: "#/definitions/node" }, n: { oneOf: [{ type: "integer" }, { type: "null" }] }, e: { enum: [1, 2] } },
        additionalProperties: false
      },
      "p",
      dropped
    )
    expect(schema).toEqual({
      type: "object",
      properties: { root: { type: "object", properties: { next: {} } }, n: { anyOf: [{ type: "integer" }, { type: "null" }] }, e: {} }
    })
    expect(dropped).toEqual(["p.$ref", "p.enum"])
  })
})

describe("Gemini response decoding", () => {
  it("reads thought, text and function-call parts, the finish and usage (thinking in output and reasoning tokens)", () => {
    const decoded = decodeGeminiResponse({
      candidates: [{
        content: { role: "model", parts: [{ text: "hmm", thought: true }, { text: "hi", thoughtSignature: "s1" }, { functionCall: { name: "f", args: { x: 1 } }, thoughtSignature: "czI=" }] },
        finishReason: "STOP"
      }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, thoughtsTokenCount: 3, cachedContentTokenCount: 4 },
      modelVersion: "gemini-x",
      responseId: "r1"
    })
    expect(Result.isSuccess(decoded)).toBe(true)
    if (!Result.isSuccess(decoded)) return
    const { content, stopReason, usage, id, model } = decoded.success
    expect({ id, model, stopReason, usage }).toEqual({
      id: "r1",
      model: "gemini-x",
      stopReason: "tool_use",
      usage: { inputTokens: 10, outputTokens: 8, cacheReadTokens: 4, reasoningTokens: 3 }
    })
    expect(content.slice(0, 3)).toEqual([{ type: "reasoning", text: "hmm", signature: undefined }, { type: "reasoning", text: "", signature: "s1" }, { type: "text", text: "hi" }])
    const call = content[3]
    expect(call.type === "tool_call" && splitToolCallId(call.id).signature).toBe("czI=")
  })

  it("finish reasons: MAX_TOKENS is max_tokens; SAFETY, RECITATION, PROHIBITED_CONTENT after some content are content_filter", () => {
    const stop = (json: unknown) => Result.getOrThrow(decodeGeminiResponse(json)).stopReason
    const withFinish = (finishReason: string) => ({ candidates: [{ content: { parts: [{ text: "x" }] }, finishReason }] })
    expect(stop(withFinish("MAX_TOKENS"))).toBe("max_tokens")
    for (const reason of ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"]) expect(stop(withFinish(reason))).toBe("content_filter")
    expect(Result.isFailure(decodeGeminiResponse({ candidates: [{ content: { parts: ["bad"] } }] }))).toBe(true)
  })

  it("a safety block that answered nothing (a blocked prompt, a blocked empty candidate) is the content_policy error it reports", () => {
    const reported = (json: unknown) => {
      const decoded = decodeGeminiResponse(json)
      return Result.isFailure(decoded) ? decoded.failure.reported : undefined
    }
    expect(reported({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" } }))
      .toEqual({ type: "content_policy", code: "PROHIBITED_CONTENT", message: "the provider's safety filter blocked the prompt (PROHIBITED_CONTENT)", status: 400 })
    for (const reason of ["SAFETY", "BLOCKLIST", "SPII", "PROHIBITED_CONTENT"]) {
      expect(reported({ candidates: [{ content: { parts: [], role: "model" }, finishReason: reason }] })).toMatchObject({ type: "content_policy", code: reason })
      expect(reported({ candidates: [{ finishReason: reason }] })).toMatchObject({ type: "content_policy", code: reason })
    }
  })
})

const event = (parts: Array<unknown>, extra: Record<string, unknown> = {}) =>
  chunk({ candidates: [{ content: { role: "model", parts }, index: 0, ...extra }], modelVersion: "g", responseId: "r" })

describe("Gemini stream decoding", () => {
  it("streams text, thinking with its signature and a whole function call; usage and message_stop come at EOF", () => {
    const events = decodeAll(makeGeminiStreamDecoder(), [
      event([{ text: "think", thought: true, thoughtSignature: "ts" }]),
      event([{ text: "Hel" }]),
      event([{ text: "lo" }, { functionCall: { name: "f", args: {} } }]),
      event([{ text: "" }], { finishReason: "STOP" }),
      chunk({ candidates: [{ content: { parts: [] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 3 } })
    ])
    const [start, ...rest] = events
    expect(start).toMatchObject({ type: "message_start", id: "r", model: "g" })
    const call = rest[4] as Extract<ChatStreamEvent, { type: "tool_call_start" }>
    expect(rest).toEqual([
      { type: "reasoning_delta", text: "think" },
      { type: "reasoning_signature", signature: "ts" },
      { type: "text_delta", text: "Hel" },
      { type: "text_delta", text: "lo" },
      { type: "tool_call_start", index: 0, id: call.id, name: "f" },
      { type: "tool_call_delta", index: 0, argumentsDelta: "{}" },
      { type: "message_delta", stopReason: "tool_use" },
      { type: "usage", usage: { inputTokens: 2, outputTokens: 3 } },
      { type: "message_stop" }
    ])
  })

  it("a stream cut before its finish reason, an event that is not JSON, and an error event end in an error", () => {
    const cut = decodeAll(makeGeminiStreamDecoder(), [event([{ text: "a" }])])
    expect(cut.at(-1)).toMatchObject({ type: "error", error: { malformed: true, status: 502 } })
    const garbage = decodeAll(makeGeminiStreamDecoder(), [{ data: "{not json" }])
    expect(garbage).toEqual([{ type: "error", error: expect.objectContaining({ malformed: true }) }])
    const failed = decodeAll(makeGeminiStreamDecoder(), [chunk({ error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } })])
    expect(failed).toEqual([{ type: "error", error: { type: "UNAVAILABLE", code: "UNAVAILABLE", message: "The model is overloaded.", status: 503 } }])
  })

  it("a safety block before any content ends the stream with the content_policy error; after content it is the content_filter finish", () => {
    const blockedPrompt = decodeAll(makeGeminiStreamDecoder(), [chunk({ promptFeedback: { blockReason: "BLOCKLIST" }, modelVersion: "g", responseId: "r" })])
    expect(blockedPrompt.slice(1)).toEqual([{ type: "error", error: { type: "content_policy", code: "BLOCKLIST", message: "the provider's safety filter blocked the prompt (BLOCKLIST)", status: 400 } }])
    const blockedAnswer = decodeAll(makeGeminiStreamDecoder(), [event([], { finishReason: "SAFETY" }), event([{ text: "late" }], { finishReason: "STOP" })])
    expect(blockedAnswer.slice(1)).toEqual([{ type: "error", error: expect.objectContaining({ type: "content_policy", code: "SAFETY" }) }])
    const afterContent = decodeAll(makeGeminiStreamDecoder(), [event([{ text: "Some" }]), event([], { finishReason: "SAFETY" })])
    expect(afterContent.slice(1)).toEqual([{ type: "text_delta", text: "Some" }, { type: "message_delta", stopReason: "content_filter" }, { type: "message_stop" }])
  })
})
