/**
 * Events read by a learnt shape instead of `JSON.parse`
 * (src/formats/json-shape.ts): a match must hand back exactly what a parse of
 * the event gives, and the OpenAI Chat, Anthropic and Responses decoders,
 * reading their streams so, must decode every stream as they decode the same
 * stream parsed (the reference: its chunks pretty-printed, the same JSON,
 * which no shape matches).
 */
import { describe, expect, it, vi } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { Anthropic, OpenAiChat, OpenAiResponses } from "../../src/formats/index.ts"
import type { SseEvent } from "../../src/formats/index.ts"
import { JsonShape, JsonShapes } from "../../src/formats/json-shape.ts"
import type { Hole } from "../../src/formats/json-holes.ts"
import { ResponseCollector } from "../../src/pipeline/chat/collector.ts"
import { chatStreamGate } from "../../src/pipeline/chat/fast.ts"
import { random, randomMutations, textMutations } from "./mutations.ts"

const chunkOf = (id: string, created: number, delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id,
  object: "chat.completion.chunk",
  created,
  model: "gpt-x",
  system_fingerprint: "fp_1",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
  ...extra
})

/** A chunk with a text, an obfuscation pad and usage, and its holes. */
const learnt = (): { readonly data: string; readonly shape: JsonShape } => {
  const json = chunkOf("chatcmpl-1", 100, { content: "hello" }, { obfuscation: "pad", usage: { prompt_tokens: 3, completion_tokens: 5, details: { cached_tokens: 0 } } })
  const data = JSON.stringify(json)
  const object = JSON.parse(data) as ReturnType<typeof chunkOf> & { usage: { details: Record<string, unknown> } }
  const delta = object.choices[0].delta
  const holes: Array<Hole> = [
    { owner: object, key: "id", kind: "string" },
    { owner: object, key: "created", kind: "integer" },
    { owner: delta, key: "content", kind: "string" },
    { owner: object, key: "obfuscation", kind: "string" },
    { owner: object.usage, key: "prompt_tokens", kind: "integer" },
    { owner: object.usage, key: "completion_tokens", kind: "integer" },
    { owner: object.usage.details, key: "cached_tokens", kind: "integer" }
  ]
  const shape = JsonShape.learn(data, object, holes)
  if (shape === undefined) throw new Error("no shape learnt")
  return { data, shape }
}

/** Events that look like the learnt one but may not be: each must read as a parse says, or not match. */
const variants = (base: string, next: () => number): Array<string> => {
  const crafted = [
    base.replace("\"hello\"", JSON.stringify("a \"quoted\" \\ back\nslash\t\u00e9 \ud83d\ude00 日本")),
    base.replace("\"hello\"", "\"\""),
    base.replace("\"hello\"", JSON.stringify("</script>\u2028")),
    base.replace("\"hello\"", "\"\\ud800\""),
    ...textMutations(base),
    base.replace("chatcmpl-1", "chatcmpl-\\u0041b"),
    base.replace("chatcmpl-1", "another-id-of-some-length"),
    base.replace("\"created\":100", "\"created\":1795812210"),
    base.replace("\"created\":100", "\"created\":-7"),
    base.replace("\"created\":100", "\"created\":-0"),
    base.replace("\"created\":100", "\"created\":0"),
    base.replace("\"created\":100", "\"created\":9007199254740993"),
    base.replace("\"created\":100", "\"created\":123456789012345678901234567890"),
    base.replace("\"created\":100", "\"created\":1.5"),
    base.replace("\"created\":100", "\"created\":1e3"),
    base.replace("\"created\":100", "\"created\":0123"),
    base.replace("\"created\":100", "\"created\":-"),
    base.replace("\"created\":100", "\"created\":\"100\""),
    base.replace("\"prompt_tokens\":3", "\"prompt_tokens\":31337"),
    base.replace("\"cached_tokens\":0", "\"cached_tokens\":12"),
    base.replace("null}]", "\"stop\"}]"),
    base.replace("\"obfuscation\":\"pad\"", "\"obfuscation\":\"a\\\"b\""),
    base.replace("\"obfuscation\":\"pad\"", "\"obfuscation\":\"a\\qb\""),
    base.replace("\"obfuscation\":\"pad\"", "\"obfuscation\":7"),
    `x${base}`,
    ""
  ]
  const mutated = randomMutations(base, next, 1500)
  return [...crafted, ...mutated]
}

const parsed = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}

describe("an event read by a learnt shape", () => {
  it("is what JSON.parse makes of it, or does not match", () => {
    const { data, shape } = learnt()
    let matched = 0
    for (const variant of variants(data, random(29))) {
      const object = shape.match(variant)
      if (object === undefined) continue
      matched++
      expect(structuredClone(object), variant).toEqual(parsed(variant))
    }
    // The crafted valid ones at least (escapes, unicode, other ids, times and counts).
    expect(matched).toBeGreaterThan(15)
  })

  it("reads strings with escapes and unicode, and integers past 2^53, as JSON.parse does", () => {
    const { data, shape } = learnt()
    for (const [from, to] of [
      ["\"hello\"", JSON.stringify("tab\there \"q\" \\ é 😀 \u2028")],
      ["\"created\":100", "\"created\":9007199254740993"],
      ["\"created\":100", "\"created\":-0"]
    ]) {
      const variant = data.replace(from, to)
      expect(Object.is((shape.match(variant) as { created: number }).created, (JSON.parse(variant) as { created: number }).created)).toBe(true)
      expect(structuredClone(shape.match(variant))).toEqual(JSON.parse(variant))
    }
  })

  it("writes a `__proto__` member into the own property JSON.parse made, not the prototype", () => {
    const shapes = new JsonShapes(4, { strings: new Set(), fixedIntegers: new Set(), learns: () => true })
    const reader = shapes.reader()
    const data = "{\"usage\":{\"__proto__\":1,\"n\":2}}"
    reader.read(data)
    const other = data.replace(":1,", ":7,").replace(":2}", ":3}")
    expect(structuredClone(reader.read(other))).toEqual(JSON.parse(other))
    expect(Object.keys((reader.read(other) as { usage: object }).usage)).toEqual(["__proto__", "n"])
  })

  it("is not learnt from an event its serializer spaced otherwise", () => {
    const json = chunkOf("chatcmpl-1", 100, { content: "hello" })
    const data = JSON.stringify(json, null, 1)
    const object = JSON.parse(data) as typeof json
    expect(JsonShape.learn(data, object, [{ owner: object, key: "id", kind: "string" }])).toBeUndefined()
  })
})

const pretty = (event: SseEvent): SseEvent => {
  const json = parsed(event.data)
  return json === undefined ? event : { ...event, data: JSON.stringify(json, null, 1) }
}

const decode = (events: ReadonlyArray<SseEvent>): Array<ChatStreamEvent> => {
  const decoder = OpenAiChat.makeOpenAiChatStreamDecoder()
  return [...events.flatMap((event) => decoder.push(event)), ...decoder.end()]
}

/** A stream as an upstream sends it: its own id and creation time, role, texts, finish, a usage-only chunk, `[DONE]`. */
const openAiStream = (n: number, texts: ReadonlyArray<string>, finish = "stop"): Array<SseEvent> => {
  const id = `chatcmpl-${n}-${"x".repeat(n % 5)}`
  const created = 1795812210 + n
  const extra = { usage: null }
  return [
    { role: "assistant", content: "", refusal: null },
    ...texts.map((content) => ({ content }))
  ].map((delta) => ({ data: JSON.stringify(chunkOf(id, created, delta, extra)) })).concat([
    { data: JSON.stringify({ ...chunkOf(id, created, {}, extra), choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }] }) },
    { data: JSON.stringify({ ...chunkOf(id, created, {}), choices: [], usage: { prompt_tokens: 10 + n, completion_tokens: texts.length, total_tokens: 10 + n + texts.length, prompt_tokens_details: { cached_tokens: n } } }) },
    { data: "[DONE]" }
  ])
}

describe("OpenAI Chat streams read by shapes", () => {
  it("decode as the same streams parsed: each its own id, time, text, finish and usage", () => {
    const next = random(7)
    const words = ["Hi", " \"there\"", "\n", " 日本", " 😀", "\\", " end", "</script>"]
    for (let n = 0; n < 40; n++) {
      const texts = Array.from({ length: 1 + Math.floor(next() * 6) }, () => words[Math.floor(next() * words.length)])
      const stream = openAiStream(n, texts, n % 3 === 0 ? "length" : "stop")
      expect(decode(stream), `stream ${n}`).toEqual(decode(stream.map(pretty)))
    }
  })

  it("a stream of a shape seen before parses none of its chunks, and still reports its own id, time and usage", () => {
    decode(openAiStream(1, ["a", "b"]))
    const stream = openAiStream(2, ["c", "d", "e"])
    const parse = vi.spyOn(JSON, "parse")
    const events = decode(stream)
    expect(parse).not.toHaveBeenCalled()
    parse.mockRestore()
    expect(events).toEqual(decode(stream.map(pretty)))
    expect(events[0]).toEqual({ type: "message_start", id: "chatcmpl-2-xx", model: "gpt-x", created: 1795812212 })
    expect(events.at(-2)).toEqual({ type: "usage", usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 2 } })
  })

  it("after its first text chunk, a stream's text chunks (an obfuscation pad in each) are read by its text template alone", () => {
    const stream = (n: number) =>
      ["", "a", "bc", "d\"e", "f"].map((content, i) => ({
        data: JSON.stringify(chunkOf(`chatcmpl-o${n}`, 100 + n, i === 0 ? { role: "assistant", content } : { content }, { obfuscation: "x".repeat(i + n) }))
      }))
    decode(stream(1))
    const decoder = OpenAiChat.makeOpenAiChatStreamDecoder()
    const [first, second, ...rest] = stream(2)
    decoder.push(first)
    decoder.push(second)
    const match = vi.spyOn(JsonShape.prototype, "match")
    const parse = vi.spyOn(JSON, "parse")
    const events = rest.flatMap((event) => decoder.push(event))
    expect(match).not.toHaveBeenCalled()
    expect(parse).toHaveBeenCalledTimes(1) // the text with an escape in it
    vi.restoreAllMocks()
    expect(events).toEqual(["bc", "d\"e", "f"].map((text) => ({ type: "text_delta", text })))
  })

  it("a chunk that changes shape mid-stream (a tool call, an error, a malformed one) decodes as parsed", () => {
    decode(openAiStream(3, ["a", "b"]))
    const [role, text] = openAiStream(4, ["x"])
    const tool = chunkOf("chatcmpl-4-x", 1795812214, { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "{\"a\":" } }] })
    const args = chunkOf("chatcmpl-4-x", 1795812214, { tool_calls: [{ index: 0, function: { arguments: "1}" } }] })
    for (const last of [
      { data: JSON.stringify(tool) },
      { data: JSON.stringify({ error: { message: "overloaded", type: "server_error" } }) },
      { data: text.data.slice(0, -2) }
    ]) {
      const stream = [role, text, last, { data: JSON.stringify(args) }, { data: "[DONE]" }]
      expect(decode(stream)).toEqual(decode(stream.map(pretty)))
    }
  })

  it("through the fast path's gate, split across reads at any byte, a stream commits and reports as whole", () => {
    const body = (n: number) => Buffer.from(openAiStream(n, ["é", " 😀 ", "z"]).map((event) => `data: ${event.data}\n\n`).join(""))
    const outcome = (chunks: ReadonlyArray<Uint8Array>) => {
      const collector = new ResponseCollector(undefined, true, undefined, true)
      const gate = chatStreamGate("openai", collector)
      const verdicts = chunks.map((chunk) => gate.push(chunk))
      return { verdict: verdicts.includes("commit"), end: gate.end(), events: collector.tapped, text: collector.text, usage: collector.usage, id: collector.id }
    }
    const whole = body(5)
    const expected = outcome([body(5)])
    expect(expected.events).toEqual(decode(openAiStream(5, ["é", " 😀 ", "z"]).map(pretty)))
    expect(expected.text).toBe("é 😀 z")
    expect(expected.id).toBe("chatcmpl-5-")
    for (let at = 1; at < whole.length; at += 7) {
      expect(outcome([whole.subarray(0, at), whole.subarray(at)]), `split at ${at}`).toEqual(expected)
    }
  })
})

/** An Anthropic stream: its own message id and counts, a text block, a tool block, the finish, `message_stop`. */
const anthropicStream = (n: number, texts: ReadonlyArray<string>): Array<SseEvent> =>
  [
    { type: "message_start", message: { id: `msg_${n}${"x".repeat(n % 4)}`, type: "message", role: "assistant", model: "claude-x", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20 + n, cache_read_input_tokens: n, output_tokens: 1 } } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "ping" },
    ...texts.map((text) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
    { type: "content_block_stop", index: 0 },
    { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: `toolu_${n}`, name: "lookup", input: {} } },
    { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: `{"q":${n}` } },
    { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "}" } },
    { type: "content_block_stop", index: 1 },
    { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 5 + n } },
    { type: "message_stop" }
  ].map((json) => ({ event: json.type, data: JSON.stringify(json) }))

/** A stream's events through a fresh decoder, then its end. */
const decodeWith = (make: () => { push: (event: SseEvent) => ReadonlyArray<ChatStreamEvent>; end: () => ReadonlyArray<ChatStreamEvent> }) =>
(events: ReadonlyArray<SseEvent>): Array<ChatStreamEvent> => {
  const decoder = make()
  return [...events.flatMap((event) => decoder.push(event)), ...decoder.end()]
}

/** Streams of random texts (from `seed`), each decoded as the same stream pretty-printed (parsed) is. */
const expectDecodedAsParsed = (
  decode: (events: ReadonlyArray<SseEvent>) => Array<ChatStreamEvent>,
  streamOf: (n: number, texts: ReadonlyArray<string>) => Array<SseEvent>,
  seed: number
): void => {
  const next = random(seed)
  const words = ["Hi", " \"there\"", "\n", " 日本", " 😀", "\\", " end"]
  for (let n = 0; n < 30; n++) {
    const texts = Array.from({ length: 1 + Math.floor(next() * 5) }, () => words[Math.floor(next() * words.length)])
    const stream = streamOf(n, texts)
    expect(decode(stream), `stream ${n}`).toEqual(decode(stream.map(pretty)))
  }
}

const decodeAnthropic = decodeWith(() => Anthropic.makeAnthropicStreamDecoder({ created: 1 }))

describe("Anthropic Messages streams read by shapes", () => {
  it("decode as the same streams parsed: each its own id, text, tool call, finish and usage", () => {
    expectDecodedAsParsed(decodeAnthropic, anthropicStream, 11)
  })

  it("a stream of a shape seen before parses none of its events, and still reports its own id and usage", () => {
    decodeAnthropic(anthropicStream(1, ["a", "b"]))
    const stream = anthropicStream(2, ["c", "d"])
    const parse = vi.spyOn(JSON, "parse")
    const events = decodeAnthropic(stream)
    // Only the string tokens with escapes in them (the tool call's partial JSON), never an event.
    expect(parse.mock.calls.map(([text]) => text)).toEqual(["\"{\\\"q\\\":2\""])
    parse.mockRestore()
    expect(events).toEqual(decodeAnthropic(stream.map(pretty)))
    expect(events[0]).toMatchObject({ type: "message_start", id: "msg_2xx", usage: { inputTokens: 24, cacheReadTokens: 2 } })
    expect(events).toContainEqual({ type: "tool_call_start", index: 0, id: "toolu_2", name: "lookup" })
    expect(events).toContainEqual({ type: "tool_call_delta", index: 0, argumentsDelta: "{\"q\":2" })
  })
})

/**
 * A Responses stream as an upstream's `/responses` sends it: its own response and item ids,
 * creation time and sequence numbers, a message of texts, a function call, the completion.
 */
const responsesStream = (n: number, texts: ReadonlyArray<string>): Array<SseEvent> => {
  const id = `resp_${n}${"x".repeat(n % 4)}`
  const created = 1795812210 + n
  const message = `msg_${n}`
  const call = `fc_${n}`
  const text = texts.join("")
  const args = `{"q":${n}}`
  const response = (status: string, output: ReadonlyArray<unknown>, usage: unknown) =>
    ({ id, object: "response", created_at: created, status, model: "gpt-x", output, previous_response_id: n % 2 === 0 ? null : `resp_prev${n}`, tools: [], usage })
  const part = (text: string) => ({ type: "output_text", text, annotations: [] })
  const messageItem = (status: string, content: ReadonlyArray<unknown>) => ({ id: message, type: "message", status, role: "assistant", content })
  const callItem = (status: string, args: string) => ({ id: call, type: "function_call", status, call_id: `call_${n}`, name: "lookup", arguments: args })
  const done = [messageItem("completed", [part(text)]), callItem("completed", args)]
  const events: Array<Record<string, unknown>> = [
    { type: "response.created", response: response("in_progress", [], null) },
    { type: "response.in_progress", response: response("in_progress", [], null) },
    { type: "response.output_item.added", output_index: 0, item: messageItem("in_progress", []) },
    { type: "response.content_part.added", item_id: message, output_index: 0, content_index: 0, part: part("") },
    ...texts.map((delta) => ({ type: "response.output_text.delta", item_id: message, output_index: 0, content_index: 0, delta, logprobs: [] })),
    { type: "response.output_text.done", item_id: message, output_index: 0, content_index: 0, text, logprobs: [] },
    { type: "response.content_part.done", item_id: message, output_index: 0, content_index: 0, part: part(text) },
    { type: "response.output_item.done", output_index: 0, item: done[0] },
    { type: "response.output_item.added", output_index: 1, item: callItem("in_progress", "") },
    { type: "response.function_call_arguments.delta", item_id: call, output_index: 1, delta: args },
    { type: "response.function_call_arguments.done", item_id: call, output_index: 1, arguments: args },
    { type: "response.output_item.done", output_index: 1, item: done[1] },
    {
      type: "response.completed",
      response: response("completed", done, { input_tokens: 20 + n, input_tokens_details: { cached_tokens: n }, output_tokens: 5 + n, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 25 + 2 * n })
    }
  ]
  return events.map((event, sequence) => ({ event: String(event.type), data: JSON.stringify({ type: event.type, sequence_number: sequence, ...event }) }))
}

const decodeResponses = decodeWith(OpenAiResponses.makeResponsesStreamDecoder)

describe("Responses streams read by shapes", () => {
  it("decode as the same streams parsed: each its own id, time, text, tool call, finish and usage", () => {
    expectDecodedAsParsed(decodeResponses, responsesStream, 13)
  })

  it("a stream of a shape seen before parses none of its events, and still reports its own id, time, tool call and usage", () => {
    decodeResponses(responsesStream(1, ["a", "b"]))
    const stream = responsesStream(3, ["c", "d", "e"])
    const parse = vi.spyOn(JSON, "parse")
    const events = decodeResponses(stream)
    // Only the string tokens with escapes in them (the tool call's arguments, in its delta, its done, its
    // item's done and the completion), never an event.
    expect(parse.mock.calls.map(([text]) => text)).toEqual(Array(4).fill("\"{\\\"q\\\":3}\""))
    parse.mockRestore()
    expect(events).toEqual(decodeResponses(stream.map(pretty)))
    expect(events[0]).toEqual({ type: "message_start", id: "resp_3xxx", model: "gpt-x", created: 1795812213 })
    expect(events).toContainEqual({ type: "tool_call_start", index: 0, id: "call_3", name: "lookup" })
    expect(events).toContainEqual({ type: "tool_call_delta", index: 0, argumentsDelta: "{\"q\":3}" })
    expect(events.at(-2)).toEqual({ type: "usage", usage: { inputTokens: 23, outputTokens: 8, cacheReadTokens: 3, reasoningTokens: 0 } })
  })

  it("an error or a malformed event mid-stream decodes as parsed", () => {
    decodeResponses(responsesStream(5, ["a"]))
    const stream = responsesStream(6, ["x", "y"])
    for (const last of [
      { event: "error", data: JSON.stringify({ type: "error", sequence_number: 5, code: "server_error", message: "overloaded", param: null }) },
      { event: "response.failed", data: JSON.stringify({ type: "response.failed", sequence_number: 5, response: { id: "resp_6", status: "failed", error: { code: "server_error", message: "boom" } } }) },
      { event: "response.output_text.delta", data: stream[4].data.slice(0, -2) }
    ]) {
      const cut = [...stream.slice(0, 5), last, ...stream.slice(5)]
      expect(decodeResponses(cut)).toEqual(decodeResponses(cut.map(pretty)))
    }
  })
})
