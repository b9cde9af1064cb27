import OpenAI from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "gpt-4o-mini", "shared"], credential: "env::OPENAI_KEY" },
      groq: { kind: "openai", base_url: `${fakes.openai.url}/v1`, models: ["shared"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    },
    models: { "gpt-4o-mini": { timeout_ms: 250 } },
    targets: {
      primary: { model: "gpt-4o" },
      backup: { model: "claude-sonnet-4-5" },
      slow: { model: "gpt-4o-mini" }
    },
    routes: {
      smart: { endpoint: "chat", models: ["smart"], strategy: "fallback", targets: ["primary", "backup"], retry: { max_retries: 2, backoff_base_ms: 1 } },
      claude_first: { endpoint: "chat", models: ["claude-first"], strategy: "fallback", targets: ["backup", "primary"], retry: { max_retries: 0, backoff_base_ms: 1 } },
      impatient: { endpoint: "chat", models: ["impatient"], strategy: "fallback", targets: ["slow", "backup"], retry: { max_retries: 0, backoff_base_ms: 1 } },
      vectors: { endpoint: "embeddings", models: ["vectors"], strategy: "single", targets: ["primary"] }
    },
    functions: {
      tuned: {
        endpoint: "chat",
        strategy: "experiment",
        variants: { only: { model: "gpt-4o", weight: 1, temperature: 0.25, max_tokens: 77 } }
      }
    }
  }),
  { OPENAI_KEY: "sk-openai-conf", ANTHROPIC_KEY: "sk-ant-conf" }
)
let client: OpenAI

beforeAll(() => {
  // No caller key: the configured credentials are used.
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
})

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

describe("routing end to end", () => {
  it("falls back from a failing OpenAI target to Anthropic, after the retries, counted at the fake", async () => {
    fakes.openai.script({ kind: "error", status: 500, times: 3 })
    const response = await client.chat.completions.create({ model: "smart", messages: [{ role: "user", content: "fall back please" }] }).withResponse()
    expect(response.data.choices[0].message.content).toBe("echo: fall back please")
    expect(response.response.headers.get("x-gw-upstream-provider")).toBe("anthropic")
    expect(fakes.openai.requests.length).toBe(3) // the first attempt and max_retries = 2
    expect(fakes.anthropic.requests.length).toBe(1)
    expect(fakes.anthropic.requests[0].json).toMatchObject({ model: "claude-sonnet-4-5", max_tokens: 4096 })
    expect(fakes.anthropic.requests[0].headers["x-api-key"]).toBe("sk-ant-conf")
    const logs = await waitForRequestLogs(gateway, 1)
    expect(logs.at(-1)).toMatchObject({ provider: "anthropic", attempts: 4, status: 200 })
    const attempts = gateway.logs.filter((line) => line.msg === "attempt" && line.request_id === logs.at(-1)!.request_id)
    expect(attempts.map((line) => [line.attempt, line.provider, line.outcome])).toEqual([
      [1, "openai", "upstream"],
      [2, "openai", "upstream"],
      [3, "openai", "upstream"],
      [4, "anthropic", "ok"]
    ])
  })

  it("a bad request stops at once: no retry, no fallback", async () => {
    fakes.openai.script({ kind: "error", status: 400 })
    const response = await post({ model: "smart", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(400)
    expect(response.headers.get("x-gw-error-code")).toBe("bad_request")
    expect(fakes.openai.requests.length).toBe(1)
    expect(fakes.anthropic.requests.length).toBe(0)
  })

  it("a slow target is cut off by its model timeout and the next target answers", async () => {
    fakes.openai.script({ kind: "delay", ms: 2000 })
    const response = await post({ model: "impatient", messages: [{ role: "user", content: "quick" }] })
    expect(response.status).toBe(200)
    expect(response.headers.get("x-gw-upstream-provider")).toBe("anthropic")
    await fakes.openai.waitForClosedEarly(1)
  })

  it("a route alias reaches the provider as the caller's own bytes with only the model replaced", async () => {
    const raw = '{ "model" : "smart",\n  "messages": [{"role": "user", "content": "bytes \\u00e9 kept"}],  "temperature": 0.50 }'
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: raw })
    expect(response.status).toBe(200)
    expect(fakes.openai.requests[0].body.toString("utf8")).toBe(raw.replace('"smart"', '"gpt-4o"'))
  })

  it("success responses name the provider that answered", async () => {
    const response = await post({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
    expect(response.headers.get("x-gw-upstream-provider")).toBe("openai")
  })

  it("an ambiguous model is a 409 naming the explicit choices", async () => {
    const response = await post({ model: "shared", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(409)
    const body = await response.json() as { error: { code: string; message: string } }
    expect(body.error.code).toBe("ambiguous_model")
    expect(body.error.message).toContain("groq::shared")
    expect(fakes.openai.requests.length).toBe(0)
  })

  it("provider:: and x-genai-provider pick one of them", async () => {
    expect((await post({ model: "groq::shared", messages: [{ role: "user", content: "x" }] })).headers.get("x-gw-upstream-provider")).toBe("groq")
    expect((await post({ model: "shared", messages: [{ role: "user", content: "x" }] }, { "x-genai-provider": "openai" })).status).toBe(200)
    expect(fakes.openai.requests.map((request) => request.json)).toMatchObject([{ model: "shared" }, { model: "shared" }])
  })

  it("x-genai-provider disagreeing with the model prefix is a 400", async () => {
    const response = await post({ model: "groq::shared", messages: [{ role: "user", content: "x" }] }, { "x-genai-provider": "openai" })
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("disagrees")
  })

  it("an unknown model is a 404 in the caller's envelope", async () => {
    const response = await post({ model: "gpt-9", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(404)
    expect(await response.json()).toMatchObject({ error: { code: "model_not_found", type: "invalid_request_error" } })
  })

  it("a route used on the wrong endpoint is a 400", async () => {
    const response = await post({ model: "vectors", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: { code: "unsupported_for_model" } })
  })

  it("an experiment variant's parameters reach the provider, and the variant is reported", async () => {
    const response = await post({ model: "function::tuned", temperature: 1, messages: [{ role: "user", content: "x" }] })
    expect(response.headers.get("x-gw-variant")).toBe("only")
    expect(fakes.openai.requests[0].json).toMatchObject({ model: "gpt-4o", temperature: 0.25, max_tokens: 77 })
  })
})

describe("bring-your-own-key across providers", () => {
  it("a caller's key goes only to the provider of the first attempt; a failover uses that provider's own credential", async () => {
    fakes.openai.script({ kind: "error", status: 500, times: 3 })
    const response = await post(
      { model: "smart", messages: [{ role: "user", content: "key check" }] },
      { authorization: "Bearer sk-callers-own-key" }
    )
    expect(response.status).toBe(200)
    expect(fakes.openai.requests.map((request) => request.headers.authorization)).toEqual(Array(3).fill("Bearer sk-callers-own-key"))
    expect(fakes.anthropic.requests[0].headers["x-api-key"]).toBe("sk-ant-conf")
    expect(JSON.stringify(fakes.anthropic.requests[0].headers)).not.toContain("callers-own")
  })
  it("a request addressed to one provider carries the caller's key in that provider's auth form", async () => {
    await post({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "x" }] }, { authorization: "Bearer any-callers-key" })
    expect(fakes.anthropic.requests[0].headers["x-api-key"]).toBe("any-callers-key")
    expect(fakes.anthropic.requests[0].headers.authorization).toBeUndefined()
  })
})

describe("log lines of streams that fail after their head", () => {
  it("a translated stream cut mid-way is logged with status 200 and its error classification", async () => {
    fakes.anthropic.script({ kind: "sse", events: [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":0}}}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial"}}\n\n'
    ], thenError: "close" })
    const response = await post({ model: "claude-sonnet-4-5", stream: true, messages: [{ role: "user", content: "x" }] }, { "x-request-id": "cut-stream" })
    const text = await response.text()
    expect(response.status).toBe(200)
    expect(text).toContain('"error"')
    let line: Record<string, unknown> | undefined
    for (let i = 0; i < 100 && line === undefined; i++) {
      line = gateway.requestLogs().find((entry) => entry.request_id === "cut-stream")
      if (line === undefined) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(line).toMatchObject({ status: 200, error_code: "upstream", path_kind: "normalized" })
  })
})

describe("failover before the caller saw anything", () => {
  it("a translated stream whose upstream sends message_start and then overloaded_error fails over", async () => {
    fakes.anthropic.script({ kind: "sse", events: [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":0}}}\n\n',
      'event: ping\ndata: {"type":"ping"}\n\n',
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    ] })
    const stream = client.chat.completions.stream({ model: "claude-first", messages: [{ role: "user", content: "rescued" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: rescued")
    expect(fakes.anthropic.requests.length).toBe(1)
    expect(fakes.openai.requests.length).toBe(1)
  })
  it("a same-format stream that answers 200 and drops before its first byte fails over", async () => {
    fakes.openai.script({ kind: "sse", events: [], thenError: "close" })
    const stream = client.chat.completions.stream({ model: "smart", messages: [{ role: "user", content: "second chance" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: second chance")
    expect(fakes.anthropic.requests.length + fakes.openai.requests.length).toBeGreaterThan(1)
  })
})
