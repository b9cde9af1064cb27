import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

let openaiUp: FakeUpstream
let anthropicUp: FakeUpstream
let gateway: RunningGateway
let client: OpenAI

beforeAll(async () => {
  openaiUp = await startFakeUpstream({ kind: "openai" })
  anthropicUp = await startFakeUpstream({ kind: "anthropic" })
  gateway = await startGateway({
    providers: {
      openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: anthropicUp.url, models: ["claude-e2e"], credential: "env::ANTHROPIC_KEY" }
    }
  }, { OPENAI_KEY: "sk-openai-conf", ANTHROPIC_KEY: "sk-ant-conf" })
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
})
afterAll(async () => {
  await gateway.close()
  await openaiUp.close()
  await anthropicUp.close()
})
beforeEach(() => {
  openaiUp.reset()
  anthropicUp.reset()
})

const weatherTool = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false
}

for (const [label, model, upstream] of [["an OpenAI-kind provider", "gpt-4o", () => openaiUp], ["an Anthropic provider", "claude-e2e", () => anthropicUp]] as const) {
  describe(`responses API to ${label}`, () => {
    it("responses.create answers a Responses object whose output_text the SDK reads", async () => {
      const response = await client.responses.create({ model, input: "hello responses", instructions: "Be brief." })
      expect(response.object).toBe("response")
      expect(response.status).toBe("completed")
      expect(response.output_text).toBe("echo: hello responses")
      expect(response.usage?.output_tokens).toBeGreaterThan(0)
      const sent = upstream().requests[0].json as Record<string, unknown>
      if (model === "gpt-4o") {
        expect(sent.messages).toEqual([{ role: "system", content: "Be brief." }, { role: "user", content: "hello responses" }])
      } else {
        expect(sent.system).toBeDefined()
        expect(sent.messages).toEqual([{ role: "user", content: [{ type: "text", text: "hello responses" }] }])
      }
    })

    it("responses.stream delivers deltas and a final response", async () => {
      const stream = client.responses.stream({ model, input: "stream this please" })
      const deltas: Array<string> = []
      stream.on("response.output_text.delta", (event) => deltas.push(event.delta))
      const final = await stream.finalResponse()
      expect(final.output_text).toBe("echo: stream this please")
      expect(deltas.join("")).toBe("echo: stream this please")
      expect(deltas.length).toBeGreaterThan(1)
    })

    it("a function call comes back as a function_call item, and its output continues the conversation", async () => {
      const first = await client.responses.create({ model, input: "use tool for Paris", tools: [weatherTool] })
      const call = first.output.find((item) => item.type === "function_call")
      expect(call).toMatchObject({ type: "function_call", name: "get_weather" })
      if (call?.type !== "function_call") throw new Error("no function call")
      expect(JSON.parse(call.arguments)).toEqual({ city: "Paris" })
      const second = await client.responses.create({
        model,
        tools: [weatherTool],
        input: [
          { role: "user", content: "use tool for Paris" },
          { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
          { type: "function_call_output", call_id: call.call_id, output: "18C and sunny" }
        ]
      })
      expect(second.output_text).toBe("echo: 18C and sunny")
    })

    it("a streamed function call is assembled by the SDK", async () => {
      const final = await client.responses.stream({ model, input: "use tool please", tools: [weatherTool] }).finalResponse()
      const call = final.output.find((item) => item.type === "function_call")
      expect(call?.type === "function_call" && JSON.parse(call.arguments)).toEqual({ city: "Paris" })
    })
  })
}

describe("/v1/responses shapes", () => {
  it("a completions-style body is answered as a chat completion", async () => {
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "chat shape" }] })
    })
    expect(await response.json()).toMatchObject({ object: "chat.completion", choices: [{ message: { content: "echo: chat shape" } }] })
  })
  it("a messages-style body (system at the top) is answered as a message", async () => {
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-e2e", max_tokens: 50, system: "terse", messages: [{ role: "user", content: "messages shape" }] })
    })
    expect(await response.json()).toMatchObject({ type: "message", content: [{ type: "text", text: "echo: messages shape" }] })
  })
  it("x-genai-sdk: anthropic selects the messages shape", async () => {
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-genai-sdk": "anthropic" },
      body: JSON.stringify({ model: "gpt-4o", max_tokens: 50, messages: [{ role: "user", content: "forced" }] })
    })
    expect(await response.json()).toMatchObject({ type: "message", content: [{ type: "text", text: "echo: forced" }] })
  })
  it("Responses-only fields that cannot be carried are reported in x-gw-dropped-params", async () => {
    const { response } = await client.responses.create({ model: "gpt-4o", input: "x", store: true, previous_response_id: "resp_1" }).withResponse()
    expect(response.headers.get("x-gw-dropped-params")?.split(",")).toEqual(expect.arrayContaining(["store", "previous_response_id"]))
  })
  it("a structured-output format asked of a messages-style model is a 400, as on chat completions", async () => {
    const error = await client.responses.create({
      model: "claude-e2e",
      input: "x",
      text: { format: { type: "json_schema", name: "out", schema: { type: "object", properties: {} } } }
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 400, error: { code: "unsupported_response_format" } })
    expect(anthropicUp.requests.length).toBe(0)
  })
  it("an upstream error reaches a Responses caller in the OpenAI envelope", async () => {
    openaiUp.script({ kind: "error", status: 400, message: "bad input" })
    await expect(client.responses.create({ model: "gpt-4o", input: "x" })).rejects.toMatchObject({ status: 400 })
  })
})
