/**
 * The AI SDK's Responses model keeps OpenAI's default `store: true`: on the
 * next turn it sends the earlier reasoning items as `item_reference`s (by id
 * only). Without the gateway's Responses store a translated provider cannot be
 * given them (a 400 that says so); with `[responses]` on, the gateway reads
 * them back from its store, and the thinking with its signature reaches the
 * upstream whole, whichever family answers. (Without the store, the
 * conformance suite's AI SDK callers send `store: false`.)
 */
import { createOpenAI } from "@ai-sdk/openai"
import { generateText, jsonSchema, tool } from "ai"
import type { ModelMessage } from "ai"
import { afterAll, describe, expect, it } from "vitest"
import { FAMILIES } from "../fixtures/conformance.ts"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import { gatewayWithFakes } from "./harness.ts"
import { keyless } from "./conformance-ai-sdk.ts"
import { WEATHER } from "./conformance-ask.ts"

const TRANSLATED = FAMILIES.filter((family) => ["anthropic", "gemini", "bedrock"].includes(family.name))
let redis: OwnRedis | undefined

const withStore = gatewayWithFakes(
  Object.fromEntries(TRANSLATED.map((family) => [family.name, family.fake])),
  async (fakes) => {
    redis = await startOwnRedis()
    return {
      providers: Object.fromEntries(TRANSLATED.map((family) => [`conf-${family.name}`, family.provider(fakes[family.name].url)])),
      routing: { retry: { max_retries: 0 } },
      cache: { enabled: false, url: redis.url, encrypt_salt: "ai-sdk-store-salt" },
      responses: { enabled: true }
    }
  },
  Object.assign({}, ...TRANSLATED.map((family) => family.env))
)
afterAll(async () => {
  await redis?.kill()
})

describe.each(TRANSLATED.map((family) => [family.name, family] as const))("AI SDK Responses with store: true, %s provider", (_name, family) => {
  it("the earlier reasoning goes back as item_reference and reaches the upstream from the gateway's store, signature and all", async () => {
    const fake = withStore.fakes[family.name]
    const model = createOpenAI({ baseURL: `${withStore.gateway.url}/v1`, apiKey: "unused", fetch: keyless }).responses(family.model)
    const tools = { get_weather: tool({ inputSchema: jsonSchema(WEATHER as Parameters<typeof jsonSchema>[0]) }) }
    const messages: Array<ModelMessage> = [{ role: "user", content: "Weather in Paris?" }]
    fake.script(family.answer({ reasoning: "One lookup.", toolCalls: [{ name: "get_weather", args: { city: "Paris" } }], usage: { input: 9, output: 4 } }))
    const first = await generateText({ model, tools, messages, maxRetries: 0 })
    expect(first.reasoning).toHaveLength(1)
    messages.push(...first.response.messages, {
      role: "tool",
      content: first.toolCalls.map((c) => ({ type: "tool-result" as const, toolCallId: c.toolCallId, toolName: c.toolName, output: { type: "text" as const, value: "sunny" } }))
    })
    fake.script(family.answer({ text: "Sunny in Paris.", usage: { input: 9, output: 4 } }))
    const second = await generateText({ model, tools, messages, maxRetries: 0 })
    expect(second.text).toBe("Sunny in Paris.")
    expect(family.toolResults(fake.lastRequest()!.json as Record<string, any>).map((r) => r.content)).toEqual(["sunny"])
    // Claude (direct or on Bedrock) needs its thinking back, signed; Gemini takes no thought text back (its signature rides on the call).
    if (family.name !== "gemini") expect(JSON.stringify(fake.lastRequest()!.json)).toMatch(/One lookup\..*c2lnbmF0dXJl/)
  })
})
