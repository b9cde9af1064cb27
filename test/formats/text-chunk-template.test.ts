/**
 * The stream decoders read text chunks of a learnt shape without parsing them
 * (src/formats/text-chunk-template.ts). Whatever a chunk holds, they must
 * decode it exactly as a parse would: the reference here is the same decoder
 * fed the same stream with its earlier chunks pretty-printed (the same JSON,
 * which it parses, never learning a shape from them).
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import { Anthropic, OpenAiChat, OpenAiResponses } from "../../src/formats/index.ts"
import type { SinkStreamDecoder, SseEvent } from "../../src/formats/index.ts"
import { random, randomMutations, textMutations } from "./mutations.ts"

interface Wire {
  readonly name: string
  readonly decoder: () => SinkStreamDecoder
  /** The events before the text. */
  readonly opening: ReadonlyArray<{ readonly event?: string; readonly json: Record<string, unknown> }>
  /** A text chunk: compact, as upstreams send them. */
  readonly text: (text: string, n: number) => { readonly event?: string; readonly json: Record<string, unknown> }
}

const openAiChunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 100,
  model: "gpt-x",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
  ...extra
})

const WIRES: ReadonlyArray<Wire> = [
  {
    name: "OpenAI Chat",
    decoder: OpenAiChat.makeOpenAiChatStreamDecoder,
    opening: [{ json: openAiChunk({ role: "assistant", content: "" }) }],
    text: (text, n) => ({ json: openAiChunk({ content: text }, { obfuscation: "x".repeat(n % 7) }) })
  },
  {
    name: "Anthropic Messages",
    decoder: () => Anthropic.makeAnthropicStreamDecoder({ created: 100 }),
    opening: [
      { event: "message_start", json: { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-x", content: [], usage: { input_tokens: 3, output_tokens: 1 } } } },
      { event: "content_block_start", json: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } } }
    ],
    text: (text) => ({ event: "content_block_delta", json: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } } })
  },
  {
    name: "Responses",
    decoder: OpenAiResponses.makeResponsesStreamDecoder,
    opening: [
      { event: "response.created", json: { type: "response.created", sequence_number: 0, response: { id: "resp_1", model: "gpt-x", created_at: 100, status: "in_progress", output: [] } } }
    ],
    text: (text, n) => ({
      event: "response.output_text.delta",
      json: { type: "response.output_text.delta", sequence_number: n, item_id: "msg_1", output_index: 0, content_index: 0, delta: text, logprobs: [], obfuscation: "ab".repeat(n % 3) }
    })
  }
]

const compact = (chunk: { readonly event?: string; readonly json: unknown }): SseEvent => ({ event: chunk.event, data: JSON.stringify(chunk.json) })
const pretty = (chunk: { readonly event?: string; readonly json: unknown }): SseEvent => ({ event: chunk.event, data: JSON.stringify(chunk.json, null, 1) })

/** What `decoder` makes of `last` after `before`. */
const decodeLast = (decoder: SinkStreamDecoder, before: ReadonlyArray<SseEvent>, last: SseEvent): Array<ChatStreamEvent> => {
  for (const event of before) decoder.push(event)
  const out: Array<ChatStreamEvent> = []
  decoder.decodeInto(last.data, last.event, out)
  return out
}

/** Chunks that look like the text chunks but are not quite: each must decode as a parse says. */
const variants = (wire: Wire, next: () => number): Array<string> => {
  const base = JSON.stringify(wire.text("hello", 3).json)
  const crafted = [
    JSON.stringify(wire.text("a \"quoted\" \\ back\nslash\t\u00e9 \ud83d\ude00 日本", 4).json),
    JSON.stringify(wire.text("", 5).json),
    JSON.stringify(wire.text("</script>\u2028", 6).json),
    ...textMutations(base),
    base.replace("null}]", "\"stop\"}]"),
    base.replace("\"delta\":{", "\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}],"),
    base.replace("\"text_delta\"", "\"thinking_delta\""),
    base.replace("\"hello\"}}", "\"hello\"},\"usage\":{\"output_tokens\":9}}"),
    base.replace(/"sequence_number":\d+/, "\"sequence_number\":-0"),
    base.replace(/"sequence_number":\d+/, "\"sequence_number\":1.5"),
    base.replace(/"sequence_number":\d+/, "\"sequence_number\":0123"),
    base.replace(/"obfuscation":"[^"]*"/, "\"obfuscation\":\"a\\\"b\""),
    base.replace(/"obfuscation":"[^"]*"/, "\"obfuscation\":\"a\\qb\""),
    base.replace(/"obfuscation":"[^"]*"/, "\"obfuscation\":7"),
  ]
  const mutated = randomMutations(base, next, 400)
  return [...crafted, ...mutated]
}

describe("text chunks of a learnt shape", () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  for (const wire of WIRES) {
    it(`${wire.name}: any chunk after the text chunks decodes as a parse of it does`, () => {
      const next = random(29)
      const before = [...wire.opening, wire.text("Hi", 1), wire.text(" there", 2)]
      for (const data of variants(wire, next)) {
        for (const event of [wire.text("", 0).event, undefined, "ping"]) {
          const last = { event, data }
          const expected = decodeLast(wire.decoder(), before.map(pretty), last)
          expect(decodeLast(wire.decoder(), before.map(compact), last), data).toEqual(expected)
        }
      }
    })

    it(`${wire.name}: a stream of text chunks decodes whole, each text once and in order, its finish after`, () => {
      const texts = ["Hi", " \"there\"", "\n", "", " 日本", " end"]
      const chunks = [...wire.opening, ...texts.map((text, i) => wire.text(text, i + 1))]
      const fast = wire.decoder()
      const reference = wire.decoder()
      const events = chunks.flatMap((chunk) => fast.push(compact(chunk)))
      expect(events).toEqual(chunks.flatMap((chunk) => reference.push(pretty(chunk))))
      expect(events.filter((event) => event.type === "text_delta")).toEqual(texts.filter((text) => text !== "").map((text) => ({ type: "text_delta", text })))
    })

    it(`${wire.name}: a text chunk of the learnt shape is read without JSON.parse`, () => {
      const decoder = wire.decoder()
      for (const chunk of [...wire.opening, wire.text("Hi", 1)]) decoder.push(compact(chunk))
      const parse = vi.spyOn(JSON, "parse")
      expect(decoder.push(compact(wire.text(" there", 2)))).toEqual([{ type: "text_delta", text: " there" }])
      expect(parse).not.toHaveBeenCalled()
    })
  }
})
