/**
 * The request half of the GenAI span is the same whichever path forwarded the
 * call: built from the caller's wire JSON (fast path) or from its canonical
 * form (normalized path), attribute for attribute.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import type { CallerFormat, ChatRequest } from "../../../src/domain/index.ts"
import { CALLER_CODECS } from "../../../src/formats/index.ts"
import { chatRequestAttributes, embeddingsRequestAttributes, plainMessagesOf } from "../../../src/pipeline/telemetry/genai/request.ts"

const decode = (format: CallerFormat, json: Record<string, unknown>): ChatRequest => {
  const decoded = CALLER_CODECS[format].decodeRequest(json)
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  return decoded.success
}

const bothWays = (format: CallerFormat, json: Record<string, unknown>, capture: boolean) => {
  const canonical = decode(format, json)
  return {
    wire: chatRequestAttributes({ format, json, canonical: () => decode(format, json) }, capture),
    canonical: chatRequestAttributes({ format: "canonical", request: canonical }, capture)
  }
}

const OPENAI_REQUEST = {
  model: "gpt-4o",
  messages: [
    { role: "system", content: "You are terse." },
    { role: "user", content: [{ type: "text", text: "Weather in Paris?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }] },
    { role: "tool", tool_call_id: "call_1", content: "rainy, 57°F" },
    { role: "user", content: "Thanks. And tomorrow?" }
  ],
  temperature: 0.2,
  max_completion_tokens: 300,
  top_p: 0.9,
  stop: "END",
  seed: 42,
  frequency_penalty: 0.5,
  presence_penalty: -0.25,
  n: 2,
  stream: true,
  stream_options: { include_usage: true },
  response_format: { type: "json_object" }
}

describe("GenAI request attributes", () => {
  it("an OpenAI request gives the same attributes from its wire JSON and from its canonical form", () => {
    const { wire, canonical } = bothWays("openai", OPENAI_REQUEST, true)
    expect(wire).toEqual(canonical)
    expect(wire).toMatchObject({
      "gen_ai.request.temperature": 0.2,
      "gen_ai.request.max_tokens": 300,
      "gen_ai.request.top_p": 0.9,
      "gen_ai.request.stop_sequences": ["END"],
      "gen_ai.request.seed": 42,
      "gen_ai.request.frequency_penalty": 0.5,
      "gen_ai.request.presence_penalty": -0.25,
      "gen_ai.request.choice.count": 2,
      "gen_ai.request.stream": true,
      "gen_ai.output.type": "json"
    })
  })

  it("captures input messages and system instructions in the conventions' JSON form", () => {
    const { wire } = bothWays("openai", OPENAI_REQUEST, true)
    expect(JSON.parse(wire["gen_ai.system_instructions"] as string)).toEqual([{ type: "text", content: "You are terse." }])
    expect(JSON.parse(wire["gen_ai.input.messages"] as string)).toEqual([
      { role: "user", parts: [{ type: "text", content: "Weather in Paris?" }, { type: "blob", modality: "image", mime_type: "image/png" }] },
      { role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: { city: "Paris" } }] },
      { role: "tool", parts: [{ type: "tool_call_response", id: "call_1", response: "rainy, 57°F" }] },
      { role: "user", parts: [{ type: "text", content: "Thanks. And tomorrow?" }] }
    ])
  })

  it("without content capture no message text is recorded and the wire path decodes nothing", () => {
    let decoded = 0
    const attributes = chatRequestAttributes({ format: "openai", json: OPENAI_REQUEST, canonical: () => (decoded++, decode("openai", OPENAI_REQUEST)) }, false)
    expect(decoded).toBe(0)
    expect(attributes["gen_ai.input.messages"]).toBeUndefined()
    expect(attributes["gen_ai.system_instructions"]).toBeUndefined()
    expect(JSON.stringify(attributes)).not.toContain("Paris")
  })

  it("an Anthropic request gives the same attributes both ways, top_k and stop_sequences included", () => {
    const json = {
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      system: [{ type: "text", text: "Be brief." }],
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "lookup", input: { q: "x" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "found" }, { type: "text", text: "go on" }] }
      ],
      temperature: 1,
      top_k: 40,
      stop_sequences: ["\n\nHuman:"]
    }
    const { wire, canonical } = bothWays("anthropic", json, true)
    expect(wire).toEqual(canonical)
    expect(wire).toMatchObject({ "gen_ai.request.max_tokens": 1024, "gen_ai.request.top_k": 40, "gen_ai.request.stop_sequences": ["\n\nHuman:"] })
    expect(wire["gen_ai.request.stream"]).toBeUndefined()
    expect(JSON.parse(wire["gen_ai.input.messages"] as string)).toEqual([
      { role: "user", parts: [{ type: "text", content: "Hi" }] },
      { role: "assistant", parts: [{ type: "tool_call", id: "toolu_1", name: "lookup", arguments: { q: "x" } }] },
      { role: "tool", parts: [{ type: "tool_call_response", id: "toolu_1", response: "found" }] },
      { role: "user", parts: [{ type: "text", content: "go on" }] }
    ])
  })

  it("a Responses API request gives the same attributes both ways", () => {
    const json = { model: "gpt-4o", input: "Summarize this", instructions: "One line.", max_output_tokens: 50, temperature: 0, text: { format: { type: "json_schema", name: "s", schema: { type: "object" } } } }
    const { wire, canonical } = bothWays("responses", json, true)
    expect(wire).toEqual(canonical)
    expect(wire).toMatchObject({ "gen_ai.request.max_tokens": 50, "gen_ai.request.temperature": 0, "gen_ai.output.type": "json" })
  })

  it("defaults are not reported: n of 1, no stream, absent parameters", () => {
    const { wire, canonical } = bothWays("openai", { model: "gpt-4o", messages: [{ role: "user", content: "hi" }], n: 1 }, false)
    expect(wire).toEqual({})
    expect(canonical).toEqual({})
  })

  it("content over 64 KB is cut to fit, the JSON stays valid and the cut is flagged", () => {
    const long = "a".repeat(50_000)
    const json = { model: "gpt-4o", messages: [{ role: "user", content: long }, { role: "assistant", content: long }, { role: "user", content: "last question" }] }
    const { wire, canonical } = bothWays("openai", json, true)
    expect(wire).toEqual(canonical)
    const captured = wire["gen_ai.input.messages"] as string
    expect(Buffer.byteLength(captured)).toBeLessThanOrEqual(64 * 1024)
    const messages = JSON.parse(captured) as Array<{ role: string; parts: Array<{ content: string }> }>
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "user"])
    expect(messages[2].parts[0].content).toBe("last question")
    expect(messages[0].parts[0].content.endsWith("…")).toBe(true)
    expect(wire["gateway.genai.content_truncated"]).toBe(true)
  })

  it("plain conversations are read from the wire without decoding the request, and capture what the canonical form does", () => {
    const plain: ReadonlyArray<readonly [CallerFormat, Record<string, unknown>]> = [
      ["openai", { model: "m", messages: [{ role: "user", content: "hello" }] }],
      ["openai", { model: "m", messages: [{ role: "developer", content: "rules" }, { role: "system", content: "more" }, { role: "user", content: "" }, { role: "assistant", content: "é ✓ 𝄞", name: "bot", refusal: null }, { role: "user", content: "again" }] }],
      ["anthropic", { model: "m", max_tokens: 5, system: "be kind", messages: [{ role: "user", content: "hi" }, { role: "assistant", content: "" }] }],
      ["anthropic", { model: "m", max_tokens: 5, system: [{ type: "text", text: "a", cache_control: { type: "ephemeral" } }, { type: "text", text: "b" }], messages: [{ role: "user", content: [{ type: "text", text: "x" }, { type: "text", text: "y" }] }, { role: "assistant", content: [] }, { role: "user", content: "z" }] }],
      ["anthropic", { model: "m", max_tokens: 5, system: "", messages: [{ role: "user", content: "only" }] }]
    ]
    for (const [format, json] of plain) {
      let decoded = 0
      const wire = chatRequestAttributes({ format, json, canonical: () => (decoded++, decode(format, json)) }, true)
      expect(decoded).toBe(0)
      expect(wire).toEqual(chatRequestAttributes({ format: "canonical", request: decode(format, json) }, true))
    }
    // Anything beyond text in plain roles goes through the canonical form.
    expect(plainMessagesOf("openai", OPENAI_REQUEST)).toBeUndefined()
    expect(plainMessagesOf("openai", { messages: [{ role: "user", content: [{ type: "text", text: "parts" }] }] })).toBeUndefined()
    expect(plainMessagesOf("anthropic", { messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "https://x" } }] }] })).toBeUndefined()
    expect(plainMessagesOf("responses", { input: "hi" })).toBeUndefined()
  })

  it("embeddings: encoding format and dimensions", () => {
    expect(embeddingsRequestAttributes({ model: "text-embedding-3-small", input: "x", encoding_format: "base64", dimensions: 256 })).toEqual({
      "gen_ai.request.encoding_formats": ["base64"],
      "gen_ai.embeddings.dimension.count": 256
    })
  })
})
