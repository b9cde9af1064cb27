import OpenAI from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"
import { RESPONSES_WEATHER_TOOL } from "../fixtures/responses.ts"

/**
 * `/v1/responses` with the official OpenAI SDK, against three kinds of provider:
 * OpenAI's own API (the request goes to its `/responses` byte for byte), an
 * OpenAI-compatible server without the Responses API (translated to Chat
 * Completions) and Anthropic (translated to Messages).
 */
const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, compat: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "o4-mini"], credential: "env::OPENAI_KEY" },
      compat: { kind: "openai", base_url: `${fakes.compat.url}/v1`, models: ["llama-compat"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "env::ANTHROPIC_KEY" }
    },
    targets: { native: { model: "gpt-4o" }, translated: { model: "claude-e2e" } },
    routes: {
      native_first: { endpoint: "chat", models: ["native-first"], strategy: "fallback", targets: ["native", "translated"], retry: { max_retries: 0, backoff_base_ms: 1 } },
      translated_first: { endpoint: "chat", models: ["translated-first"], strategy: "fallback", targets: ["translated", "native"], retry: { max_retries: 0, backoff_base_ms: 1 } }
    }
  }),
  { OPENAI_KEY: "sk-openai-conf", ANTHROPIC_KEY: "sk-ant-conf" }
)
let client: OpenAI

beforeAll(() => {
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
})

const weatherTool = RESPONSES_WEATHER_TOOL

const PROVIDERS = [
  ["OpenAI's own Responses API", "gpt-4o", () => fakes.openai],
  ["an OpenAI-compatible server (translated to Chat Completions)", "llama-compat", () => fakes.compat],
  ["an Anthropic provider", "claude-e2e", () => fakes.anthropic]
] as const

for (const [label, model, upstream] of PROVIDERS) {
  describe(`responses API to ${label}`, () => {
    it("responses.create answers a Responses object whose output_text the SDK reads", async () => {
      const response = await client.responses.create({ model, input: "hello responses", instructions: "Be brief." })
      expect(response.object).toBe("response")
      expect(response.status).toBe("completed")
      expect(response.output_text).toBe("echo: hello responses")
      expect(response.usage?.output_tokens).toBeGreaterThan(0)
      const recorded = upstream().requests[0]
      const sent = recorded.json as Record<string, unknown>
      if (model === "gpt-4o") {
        expect(recorded.pathname).toBe("/v1/responses")
        expect(sent).toEqual({ model: "gpt-4o", input: "hello responses", instructions: "Be brief." })
      } else if (model === "llama-compat") {
        expect(recorded.pathname).toBe("/v1/chat/completions")
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
  it("fields whose loss does not change the answer are named in x-gw-dropped-params when translated", async () => {
    const { response } = await client.responses.create({ model: "llama-compat", input: "x", store: true, metadata: { k: "v" } }).withResponse()
    expect(response.headers.get("x-gw-dropped-params")?.split(",")).toEqual(expect.arrayContaining(["store", "metadata"]))
  })
  it("a structured-output format asked of a messages-style model is a 400 naming text.format", async () => {
    const error = await client.responses.create({
      model: "claude-e2e",
      input: "x",
      text: { format: { type: "json_schema", name: "out", schema: { type: "object", properties: {} } } }
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 400, error: { code: "unsupported_response_format", param: "text.format" } })
    expect((error as { message: string }).message).toContain("text.format")
    expect((error as { message: string }).message).not.toContain("response_format")
    expect(fakes.anthropic.requests.length).toBe(0)
  })
  it("an upstream error reaches a Responses caller in the OpenAI envelope", async () => {
    fakes.openai.script({ kind: "error", status: 400, message: "bad input" })
    await expect(client.responses.create({ model: "gpt-4o", input: "x" })).rejects.toMatchObject({ status: 400 })
  })
})

describe("Responses requests to OpenAI's own API go to its /responses, byte for byte", () => {
  it("a round trip with previous_response_id and a hosted tool reaches the provider unchanged", async () => {
    const first = await client.responses.create({ model: "gpt-4o", input: "remember the number 7", store: true })
    const raw = JSON.stringify({
      model: "gpt-4o",
      previous_response_id: first.id,
      input: [{ role: "user", content: [{ type: "input_text", text: "what number?" }] }],
      tools: [{ type: "web_search" }],
      reasoning: { effort: "low", summary: "auto" },
      include: ["reasoning.encrypted_content"]
    })
    const second = await fetch(`${gateway.url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: raw })
    expect(second.status).toBe(200)
    expect(second.headers.get("x-gw-dropped-params")).toBeNull()
    expect(((await second.json()) as { previous_response_id: string }).previous_response_id).toBe(first.id)
    expect(fakes.openai.requests[1].pathname).toBe("/v1/responses")
    expect(fakes.openai.requests[1].body.toString("utf8")).toBe(raw)
  })

  it("stream events arrive exactly as the provider sent them", async () => {
    const raw = JSON.stringify({ model: "gpt-4o", input: "stream verbatim", stream: true })
    const response = await fetch(`${gateway.url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: raw })
    const text = await response.text()
    expect(text).toContain("event: response.created")
    expect(text).toContain('"sequence_number":0')
    expect(text).toContain("event: response.completed")
    const logs = await waitForRequestLogs(gateway, 1)
    expect(logs.at(-1)).toMatchObject({ path_kind: "fast", finish_reason: "stop", provider: "openai" })
    expect(logs.at(-1)?.output_tokens).toBeGreaterThan(0)
  })

  it("the provider's error reaches the caller verbatim with the classification headers", async () => {
    const error = await client.responses.create({ model: "gpt-4o", input: "x", previous_response_id: "resp_unknown" }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 400, error: { code: "previous_response_not_found", param: "previous_response_id" } })
    expect((error as { headers: Headers }).headers.get("x-gw-error-code")).toBe("bad_request")
  })

  it("a native failure fails over to a translated provider when the request needs nothing native", async () => {
    fakes.openai.script({ kind: "error", status: 500 })
    const response = await client.responses.create({ model: "native-first", input: "fail over" }).withResponse()
    expect(response.data.output_text).toBe("echo: fail over")
    expect(response.response.headers.get("x-gw-upstream-provider")).toBe("anthropic")
  })

  it("a stream that opens and then fails before any content is retried on the next target", async () => {
    fakes.openai.script({
      kind: "sse",
      events: [
        'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_x","object":"response","status":"in_progress","model":"gpt-4o","output":[]}}\n\n',
        'event: error\ndata: {"type":"error","code":"server_error","message":"boom","sequence_number":1}\n\n'
      ]
    })
    const final = await client.responses.stream({ model: "native-first", input: "retry me" }).finalResponse()
    expect(final.output_text).toBe("echo: retry me")
    expect(fakes.anthropic.requests.length).toBe(1)
  })
})

describe("a field whose meaning another format cannot carry is refused, never dropped behind a 200", () => {
  for (const [what, body, param] of [
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id"],
    ["a hosted tool", { tools: [{ type: "web_search" }] }, "tools[].web_search"],
    ["a stored file", { input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }] }, "input[].input_file.file_id"]
  ] as const) {
    it(`${what} to a translated provider: 400 naming ${param}, nothing sent`, async () => {
      const response = await fetch(`${gateway.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "claude-e2e", input: "x", ...body })
      })
      expect(response.status).toBe(400)
      const error = ((await response.json()) as { error: { param: string; message: string; code: string } }).error
      expect(error).toMatchObject({ param, code: "unsupported_for_model" })
      expect(error.message).toContain(param)
      // Without the gateway's Responses store, the message says how to turn it on (state only).
      expect(error.message.includes("[responses] enabled = true")).toBe(param === "previous_response_id")
      expect(fakes.anthropic.requests.length).toBe(0)
    })
  }

  it("an item_reference to a translated provider without the store: 400 naming it, and how to turn the store on", async () => {
    const error = await client.responses.create({ model: "claude-e2e", input: [{ type: "item_reference", id: "msg_1" }] }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 400, error: { param: "input[].item_reference", code: "unsupported_for_model" } })
    expect((error as Error).message).toContain("[responses] enabled = true")
    expect(fakes.anthropic.requests.length).toBe(0)
  })

  it("in a route, the translated target is skipped and the native one answers", async () => {
    const first = await client.responses.create({ model: "gpt-4o", input: "a" })
    const response = await client.responses.create({ model: "translated-first", input: "b", previous_response_id: first.id }).withResponse()
    expect(response.response.headers.get("x-gw-upstream-provider")).toBe("openai")
    expect(fakes.anthropic.requests.length).toBe(0)
  })
})

describe("reasoning effort and output limits across formats", () => {
  it("reasoning.effort becomes reasoning_effort, max_output_tokens a max_tokens for a compatible server", async () => {
    await client.responses.create({ model: "llama-compat", input: "x", reasoning: { effort: "high" }, max_output_tokens: 300 })
    expect(fakes.compat.requests[0].json).toMatchObject({ reasoning_effort: "high", max_tokens: 300 })
  })

  it("reasoning.effort becomes a thinking budget for Anthropic", async () => {
    await client.responses.create({ model: "claude-e2e", input: "x", reasoning: { effort: "medium" }, max_output_tokens: 4000 })
    expect(fakes.anthropic.requests[0].json).toMatchObject({ thinking: { type: "enabled", budget_tokens: 2048 }, max_tokens: 4000 })
  })
})
