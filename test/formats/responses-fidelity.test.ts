/**
 * Responses answers the gateway builds from another family (Chat Completions,
 * Messages) hold what OpenAI's published schema requires and what the
 * upstream said: logprobs on text, cache writes in usage, refusals as refusal
 * parts, Anthropic thinking (signed or redacted) as reasoning items that a
 * later turn can send back, and the request's reasoning effort.
 */
import { Result } from "effect"
import type { DecodeFailure } from "../../src/formats/contract.ts"
import { describe, expect, it } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { ResponseAssembler, responseEvents } from "../../src/formats/index.ts"
import { decodeAnthropicResponse, encodeAnthropicRequest, makeAnthropicStreamDecoder } from "../../src/formats/anthropic/index.ts"
import { decodeOpenAiChatResponse, makeOpenAiChatStreamDecoder } from "../../src/formats/openai-chat/index.ts"
import { decodeResponsesRequest, encodeResponsesResponse, makeResponsesStreamEncoder } from "../../src/formats/openai-responses/index.ts"
import { schemaProblems } from "./responses-schema.ts"
import { anthropicEvent, chunk, decodeAll, encodeAll, parseSse } from "./sse.ts"

type Json = Record<string, any>

const SIGNATURE = "EqQBCkgIARABGAIiQLsig"

/** A Claude answer that thought first, wrote cache, then answered and called a tool. */
const CLAUDE_ANSWER = {
  id: "msg_01think",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  content: [
    { type: "thinking", thinking: "The user wants Paris weather.", signature: SIGNATURE },
    { type: "text", text: "Let me check." },
    { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }
  ],
  stop_reason: "tool_use",
  stop_sequence: null,
  usage: { input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 30, output_tokens: 40 }
}

const CLAUDE_STREAM = [
  anthropicEvent({ type: "message_start", message: { id: "msg_01think", model: "claude-sonnet-4-5", usage: { input_tokens: 10, cache_creation_input_tokens: 200, output_tokens: 1 } } }),
  anthropicEvent({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
  anthropicEvent({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "The user wants " } }),
  anthropicEvent({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Paris weather." } }),
  anthropicEvent({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: SIGNATURE } }),
  anthropicEvent({ type: "content_block_stop", index: 0 }),
  anthropicEvent({ type: "content_block_start", index: 1, content_block: { type: "text", text: "" } }),
  anthropicEvent({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Let me check." } }),
  anthropicEvent({ type: "content_block_stop", index: 1 }),
  anthropicEvent({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 40 } }),
  anthropicEvent({ type: "message_stop" })
]

const decoded = <A>(result: Result.Result<A, DecodeFailure>): A => {
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const claudeAnswer = () => decoded(decodeAnthropicResponse(CLAUDE_ANSWER, { created: 1741476600 }))

const streamEvents = (events: ReadonlyArray<ChatStreamEvent>, request?: Parameters<typeof makeResponsesStreamEncoder>[0]): Array<Json> =>
  parseSse(encodeAll(makeResponsesStreamEncoder(request ?? { model: "claude" }), events)).map((event) => JSON.parse(event.data) as Json)

const finalResponse = (events: Array<Json>): Json => events.at(-1)!.response

/** The next turn's request with `answer`'s output sent back, and the Messages body Claude gets for it. */
const sentBack = (answer: Json) => {
  const nextTurn = decoded(decodeResponsesRequest({
    model: "claude",
    input: [
      { role: "user", content: "Weather in Paris?" },
      ...answer.output,
      { type: "function_call_output", call_id: "toolu_1", output: "sunny" }
    ]
  }))
  return { nextTurn, body: encodeAnthropicRequest(nextTurn, { model: "claude-sonnet-4-5", callerFamily: "openai" }).body as Json }
}

describe("Responses answers built from another family validate against OpenAI's published schema", () => {
  it("a Response object and every stream event from Claude's thinking, text and tool call", () => {
    expect(schemaProblems(encodeResponsesResponse(claudeAnswer()))).toEqual([])
    const events = streamEvents(decodeAll(makeAnthropicStreamDecoder({ created: 1 }), CLAUDE_STREAM))
    expect(events.flatMap(schemaProblems)).toEqual([])
  })

  it("output_text parts carry logprobs [] in the response and in every event that carries a part or an item", () => {
    const response = encodeResponsesResponse(claudeAnswer()) as Json
    expect(response.output[1].content).toEqual([{ type: "output_text", text: "Let me check.", annotations: [], logprobs: [] }])
    const events = streamEvents(decodeAll(makeAnthropicStreamDecoder({ created: 1 }), CLAUDE_STREAM))
    const textParts = events.flatMap((event) => [
      ...(event.part?.type === "output_text" ? [event.part] : []),
      ...(event.item?.type === "message" ? event.item.content : [])
    ])
    expect(textParts.length).toBeGreaterThan(0)
    for (const part of textParts) expect(part.logprobs).toEqual([])
  })

  it("usage.input_tokens_details.cache_write_tokens is Anthropic's cache_creation_input_tokens, else 0", () => {
    expect((encodeResponsesResponse(claudeAnswer()) as Json).usage.input_tokens_details).toEqual({ cached_tokens: 30, cache_write_tokens: 200 })
    const events = streamEvents(decodeAll(makeAnthropicStreamDecoder({ created: 1 }), CLAUDE_STREAM))
    expect(finalResponse(events).usage.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 200 })
    const chat = decoded(decodeOpenAiChatResponse({
      id: "chatcmpl-1",
      model: "gpt",
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 }
    }))
    expect((encodeResponsesResponse(chat) as Json).usage.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0 })
  })
})

describe("a chat upstream's refusal", () => {
  const REFUSAL = "I can't help with that."

  const refusalAnswer = () => decoded(decodeOpenAiChatResponse({
    id: "chatcmpl-2",
    model: "gpt",
    choices: [{ index: 0, message: { role: "assistant", content: null, refusal: REFUSAL }, finish_reason: "stop" }],
    usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 }
  }))

  it("becomes a refusal content part of the message, not text", () => {
    const response = encodeResponsesResponse(refusalAnswer()) as Json
    expect(response.output).toHaveLength(1)
    expect(response.output[0].content).toEqual([{ type: "refusal", refusal: REFUSAL }])
    expect(schemaProblems(response)).toEqual([])
  })

  it("streams as refusal.delta events into a refusal part", () => {
    const chunks = [
      chunk({ id: "chatcmpl-3", model: "gpt", choices: [{ index: 0, delta: { role: "assistant", refusal: "I can't " } }] }),
      chunk({ id: "chatcmpl-3", model: "gpt", choices: [{ index: 0, delta: { refusal: "help with that." } }] }),
      chunk({ id: "chatcmpl-3", model: "gpt", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
      { data: "[DONE]" }
    ]
    const events = streamEvents(decodeAll(makeOpenAiChatStreamDecoder(), chunks))
    expect(events.filter((event) => event.type === "response.refusal.delta").map((event) => event.delta)).toEqual(["I can't ", "help with that."])
    expect(events.some((event) => event.type === "response.output_text.delta")).toBe(false)
    expect(events.find((event) => event.type === "response.refusal.done")).toMatchObject({ refusal: REFUSAL, content_index: 0 })
    expect(finalResponse(events).output[0].content).toEqual([{ type: "refusal", refusal: REFUSAL }])
    expect(events.flatMap(schemaProblems)).toEqual([])
  })

  it("is a completed answer (status completed, stream ending with response.completed), as OpenAI answers a refusal", () => {
    const response = encodeResponsesResponse(refusalAnswer()) as Json
    expect(response).toMatchObject({ status: "completed", incomplete_details: null })
    expect(response.output[0].status).toBe("completed")
    const events = streamEvents(decodeAll(makeOpenAiChatStreamDecoder(), [
      chunk({ id: "chatcmpl-5", model: "gpt", choices: [{ index: 0, delta: { role: "assistant", refusal: REFUSAL } }] }),
      chunk({ id: "chatcmpl-5", model: "gpt", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
      { data: "[DONE]" }
    ]))
    expect(events.at(-1)).toMatchObject({ type: "response.completed", response: { status: "completed", incomplete_details: null } })
    expect(events.find((event) => event.type === "response.output_item.done")?.item.status).toBe("completed")
  })

  it("does not hide a content filter: a content_filter finish without a refusal stays incomplete", () => {
    const chunks = [
      chunk({ id: "chatcmpl-6", model: "gpt", choices: [{ index: 0, delta: { role: "assistant", content: "Here is how to" } }] }),
      chunk({ id: "chatcmpl-6", model: "gpt", choices: [{ index: 0, delta: {}, finish_reason: "content_filter" }] }),
      { data: "[DONE]" }
    ]
    const events = streamEvents(decodeAll(makeOpenAiChatStreamDecoder(), chunks))
    expect(events.at(-1)).toMatchObject({ type: "response.incomplete", response: { status: "incomplete", incomplete_details: { reason: "content_filter" } } })
    const assembler = new ResponseAssembler(1 << 20)
    for (const event of decodeAll(makeOpenAiChatStreamDecoder(), chunks)) assembler.event(event)
    expect(encodeResponsesResponse(assembler.result()!)).toMatchObject({ status: "incomplete", incomplete_details: { reason: "content_filter" } })
  })
})

describe("Anthropic thinking", () => {
  const reasoningItem = { type: "reasoning", summary: [{ type: "summary_text", text: "The user wants Paris weather." }], encrypted_content: SIGNATURE }

  it("becomes a reasoning item, its text the summary and its signature the encrypted_content", () => {
    const response = encodeResponsesResponse(claudeAnswer()) as Json
    expect(response.output.map((item: Json) => item.type)).toEqual(["reasoning", "message", "function_call"])
    expect(response.output[0]).toMatchObject({ ...reasoningItem, id: "rs_01think_0" })
  })

  it("streams as a reasoning item with summary events, the signature in output_item.done", () => {
    const events = streamEvents(decodeAll(makeAnthropicStreamDecoder({ created: 1 }), CLAUDE_STREAM))
    const ref = { item_id: "rs_01think_0", output_index: 0 }
    const reasoning = events.filter((event) => event.item_id === ref.item_id || event.item?.type === "reasoning")
    expect(reasoning.map(({ sequence_number: _, ...rest }) => rest)).toEqual([
      { type: "response.output_item.added", output_index: 0, item: { id: ref.item_id, type: "reasoning", summary: [], encrypted_content: null } },
      { type: "response.reasoning_summary_part.added", ...ref, summary_index: 0, part: { type: "summary_text", text: "" } },
      { type: "response.reasoning_summary_text.delta", ...ref, summary_index: 0, delta: "The user wants " },
      { type: "response.reasoning_summary_text.delta", ...ref, summary_index: 0, delta: "Paris weather." },
      { type: "response.reasoning_summary_text.done", ...ref, summary_index: 0, text: "The user wants Paris weather." },
      { type: "response.reasoning_summary_part.done", ...ref, summary_index: 0, part: { type: "summary_text", text: "The user wants Paris weather." } },
      { type: "response.output_item.done", output_index: 0, item: { id: ref.item_id, ...reasoningItem } }
    ])
    expect(finalResponse(events).output[0]).toEqual({ id: ref.item_id, ...reasoningItem })
  })

  it("sent back as a reasoning item in the next turn reaches Anthropic as the signed thinking block", () => {
    const { nextTurn, body } = sentBack(encodeResponsesResponse(claudeAnswer()) as Json)
    expect(body.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "The user wants Paris weather.", signature: SIGNATURE },
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }
      ]
    })
    expect(nextTurn.unmapped).toEqual({})
  })

  it("OpenAI's own encrypted reasoning is not sent to Anthropic as a signature, only reported dropped", () => {
    const request = decoded(decodeResponsesRequest({
      model: "claude",
      input: [
        { role: "user", content: "hi" },
        { type: "reasoning", id: "rs_abc", summary: [{ type: "summary_text", text: "thought" }], encrypted_content: "gAAAAABoOpenAiFernetToken" },
        { role: "assistant", content: "hello" },
        { role: "user", content: "again" }
      ]
    }))
    const body = encodeAnthropicRequest(request, { model: "claude-sonnet-4-5" })
    expect(JSON.stringify(body.body)).not.toContain("thinking")
    expect(body.dropped).toContain("input[].reasoning")
  })

  it("a cached answer replays its reasoning the way the upstream sent it", () => {
    const assembler = new ResponseAssembler(1 << 20)
    for (const event of decodeAll(makeAnthropicStreamDecoder({ created: 1 }), CLAUDE_STREAM)) assembler.event(event)
    const cached = assembler.result()!
    expect(cached.content[0]).toEqual({ type: "reasoning", text: "The user wants Paris weather.", signature: SIGNATURE })
    const replayed = streamEvents(responseEvents(cached))
    const original = streamEvents(decodeAll(makeAnthropicStreamDecoder({ created: 1 }), CLAUDE_STREAM))
    expect(finalResponse(replayed).output).toEqual(finalResponse(original).output)
  })
})

describe("Anthropic redacted thinking", () => {
  const DATA = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
  const redactedItem = { type: "reasoning", summary: [], encrypted_content: `redacted_thinking:${DATA}` }
  const REDACTED_ANSWER = {
    ...CLAUDE_ANSWER,
    id: "msg_01redact",
    content: [{ type: "redacted_thinking", data: DATA }, ...CLAUDE_ANSWER.content]
  }
  const REDACTED_STREAM = [
    anthropicEvent({ type: "message_start", message: { id: "msg_01redact", model: "claude-sonnet-4-5", usage: { input_tokens: 10, output_tokens: 1 } } }),
    anthropicEvent({ type: "content_block_start", index: 0, content_block: { type: "redacted_thinking", data: DATA } }),
    anthropicEvent({ type: "content_block_stop", index: 0 }),
    ...CLAUDE_STREAM.slice(1, -2).map((event) => {
      const json = JSON.parse(event.data) as Json
      return anthropicEvent({ ...json, type: json.type as string, index: json.index + 1 })
    }),
    ...CLAUDE_STREAM.slice(-2)
  ]
  const redactedAnswer = () => decoded(decodeAnthropicResponse(REDACTED_ANSWER, { created: 1741476600 }))
  const redactedStream = () => decodeAll(makeAnthropicStreamDecoder({ created: 1 }), REDACTED_STREAM)

  it("becomes a reasoning item with no summary, its data in encrypted_content behind a redacted_thinking: marker", () => {
    const response = encodeResponsesResponse(redactedAnswer()) as Json
    expect(response.output.map((item: Json) => item.type)).toEqual(["reasoning", "reasoning", "message", "function_call"])
    expect(response.output[0]).toEqual({ id: "rs_01redact_0", ...redactedItem })
    expect(response.output[1].encrypted_content).toBe(SIGNATURE)
    expect(schemaProblems(response)).toEqual([])
  })

  it("streams as a reasoning item of its own with no summary events, the data in output_item.done", () => {
    const events = streamEvents(redactedStream())
    const first = events.filter((event) => event.item_id === "rs_01redact_0" || event.item?.id === "rs_01redact_0")
    expect(first.map(({ sequence_number: _, ...rest }) => rest)).toEqual([
      { type: "response.output_item.added", output_index: 0, item: { id: "rs_01redact_0", type: "reasoning", summary: [], encrypted_content: null } },
      { type: "response.output_item.done", output_index: 0, item: { id: "rs_01redact_0", ...redactedItem } }
    ])
    const output = finalResponse(events).output
    expect(output[0]).toEqual({ id: "rs_01redact_0", ...redactedItem })
    expect(output[1]).toMatchObject({ type: "reasoning", summary: [{ text: "The user wants Paris weather." }], encrypted_content: SIGNATURE })
    expect(events.flatMap(schemaProblems)).toEqual([])
  })

  it("sent back in the next turn reaches Anthropic as the same redacted_thinking block, before the signed one", () => {
    const { nextTurn, body } = sentBack(encodeResponsesResponse(redactedAnswer()) as Json)
    expect(body.messages[1].content.slice(0, 2)).toEqual([
      { type: "redacted_thinking", data: DATA },
      { type: "thinking", thinking: "The user wants Paris weather.", signature: SIGNATURE }
    ])
    expect(nextTurn.unmapped).toEqual({})
  })

  it("a cached answer replays it as the same reasoning item", () => {
    const assembler = new ResponseAssembler(1 << 20)
    for (const event of redactedStream()) assembler.event(event)
    const cached = assembler.result()!
    expect(cached.content.slice(0, 2)).toEqual([
      { type: "reasoning", text: "", redacted: DATA },
      { type: "reasoning", text: "The user wants Paris weather.", signature: SIGNATURE }
    ])
    expect(finalResponse(streamEvents(responseEvents(cached))).output).toEqual(finalResponse(streamEvents(redactedStream())).output)
  })
})

describe("reasoning.effort", () => {
  it("is echoed in the Response object, not null", () => {
    const request = decoded(decodeResponsesRequest({ model: "claude", input: "think", reasoning: { effort: "high", summary: "auto" } }))
    expect((encodeResponsesResponse(claudeAnswer(), { request }) as Json).reasoning).toEqual({ effort: "high", summary: "auto" })
    const events = streamEvents(responseEvents(claudeAnswer()), { model: "claude", request })
    for (const event of events.filter((e) => e.response !== undefined)) expect(event.response.reasoning.effort).toBe("high")
  })
})
