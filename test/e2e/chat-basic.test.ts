import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { gatewayWithFakes } from "./harness.ts"

const { gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    }
  }),
  { OPENAI_KEY: "sk-openai-test", ANTHROPIC_KEY: "sk-ant-test" }
)

describe("chat smoke", () => {
  it("openai → openai plain text", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-openai-test", maxRetries: 0 })
    const completion = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello there" }] })
    expect(completion.choices[0].message.content).toBe("echo: hello there")
  })
  it("openai → anthropic streamed", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-ant-test", maxRetries: 0 })
    const stream = client.chat.completions.stream({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hello there" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: hello there")
  })
  it("anthropic → openai streamed", async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: "sk-openai-test", maxRetries: 0 })
    const message = await client.messages.stream({ model: "gpt-4o", max_tokens: 100, messages: [{ role: "user", content: "hello there" }] }).finalMessage()
    expect(message.content[0]).toMatchObject({ type: "text", text: "echo: hello there" })
  })
})

describe("dropped parameters", () => {
  it("field names that cannot stand in a header are counted, not written, and never turn a success into a 500", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-ant-test" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", seed: 7, "métadonnées_日本": 1, "a,b": 2, messages: [{ role: "user", content: "hi" }] })
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("x-gw-dropped-params")).toBe("seed,(2 more)")
  })
})
