/**
 * Gemini (`kind = "gemini"`) as a real provider: callers of Chat Completions,
 * Messages and the Responses API, through the official SDKs, reach a fake
 * Gemini API that checks the body like the real one (unknown fields and schema
 * keywords refused, function calls sent back without their thought signature
 * refused). Each test checks what the SDK parsed and what reached Gemini.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import type { RecordedRequest } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

const GEMINI_KEY = "gemini-configured-key-1234"
const MODEL = "gemini-2.5-flash"

const { fakes, gateway: gw } = gatewayWithFakes(
  { gemini: { kind: "gemini", apiKey: GEMINI_KEY } },
  (fakes) => ({
    providers: {
      gemini: { base_url: fakes.gemini.url, models: [MODEL], credential: "env::E2E_GEMINI_KEY" },
      "gemini-badkey": { kind: "gemini", base_url: fakes.gemini.url, models: ["gemini-wrong-key"], credential: "env::E2E_GEMINI_BAD" }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  { E2E_GEMINI_KEY: GEMINI_KEY, E2E_GEMINI_BAD: "not-the-key" }
)

/** Callers that bring no key: the configured credential is what Gemini gets. */
const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })

type Json = Record<string, any>
const sent = (index = -1): RecordedRequest => fakes.gemini.requests.at(index)!
const bodyOf = (rec: RecordedRequest): Json => rec.json as Json

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }
  }
}

describe("Gemini from an OpenAI Chat Completions caller", () => {
  it("answers a chat: generateContent at the model's URL with x-goog-api-key, system prompt as systemInstruction, usage mapped", async () => {
    const completion = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello there" }]
    })
    expect(completion.choices[0].message.content).toBe("echo: hello there")
    expect(completion.choices[0].finish_reason).toBe("stop")
    expect(completion.usage?.completion_tokens).toBe(3)
    const rec = sent()
    expect(rec.path).toBe(`/v1beta/models/${MODEL}:generateContent`)
    expect(rec.headers["x-goog-api-key"]).toBe(GEMINI_KEY)
    expect(rec.headers.authorization).toBeUndefined()
    expect(bodyOf(rec).systemInstruction).toEqual({ parts: [{ text: "Be brief." }] })
    expect(bodyOf(rec).contents).toEqual([{ role: "user", parts: [{ text: "hello there" }] }])
  })

  it("streams: streamGenerateContent?alt=sse, deltas in order, finish and usage at the end", async () => {
    const stream = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "one two three" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
    }
    expect(text).toBe("echo: one two three")
    expect(finish).toBe("stop")
    expect(usage?.completion_tokens).toBe(4)
    expect(sent().path).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`)
  })
})
