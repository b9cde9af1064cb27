/**
 * What a caller notices about request handling: bring-your-own-key vs the configured
 * credential, `response_format` a messages-style provider cannot honour, fields dropped
 * in translation, malformed input, `x-genai-sdk`, request ids and the request log line.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream, RecordedRequest } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, startGateway, waitForRequestLogs } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const CONFIGURED = { openai: "sk-configured-openai", anthropic: "sk-configured-anthropic", azure: "configured-azure-key" }
const CALLER_KEY = "sk-caller-byok-5678"

const { fakes, gateway: gw } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, azure: { kind: "azure" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::REQ_OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model"], credential: "env::REQ_ANTHROPIC_KEY" },
      azure: { base_url: fakes.azure.url, models: ["my-deployment"], api_version: "2024-10-21", credential: "env::REQ_AZURE_KEY" }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  { REQ_OPENAI_KEY: CONFIGURED.openai, REQ_ANTHROPIC_KEY: CONFIGURED.anthropic, REQ_AZURE_KEY: CONFIGURED.azure }
)

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

type Json = Record<string, any>

interface Reply {
  status: number
  headers: Headers
  text: string
  json: Json | undefined
}

const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })
  const text = await res.text()
  let json: Json | undefined
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, headers: res.headers, text, json }
}

const chat = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }
const messages = { model: "claude-e2e-model", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }

const only = (fake: FakeUpstream): RecordedRequest => {
  expect(fake.requests).toHaveLength(1)
  return fake.requests[0]
}

/** An OpenAI-shaped error body (`{error:{message,type,code}}`). */
const expectOpenAiEnvelope = (reply: Reply, code?: string) => {
  expect(reply.json, reply.text).toBeDefined()
  expect(typeof reply.json!.error.message).toBe("string")
  expect(typeof reply.json!.error.type).toBe("string")
  if (code !== undefined) expect(reply.json!.error.code).toBe(code)
  expect(reply.json).not.toHaveProperty("type")
}

/** An Anthropic-shaped error body (`{type:"error",error:{type,message}}`). */
const expectAnthropicEnvelope = (reply: Reply, type?: string) => {
  expect(reply.json, reply.text).toBeDefined()
  expect(reply.json!.type).toBe("error")
  expect(typeof reply.json!.error.message).toBe("string")
  if (type !== undefined) expect(reply.json!.error.type).toBe(type)
}

// ---------------------------------------------------------------------------
// Bring-your-own-key
// ---------------------------------------------------------------------------

describe("bring-your-own-key", () => {
  it("a caller's Authorization: Bearer replaces the configured OpenAI key", async () => {
    const reply = await post("/v1/chat/completions", chat, { authorization: `Bearer ${CALLER_KEY}` })
    expect(reply.status).toBe(200)
    const rec = only(fakes.openai)
    expect(rec.headers.authorization).toBe(`Bearer ${CALLER_KEY}`)
    expect(JSON.stringify(rec.headers)).not.toContain(CONFIGURED.openai)
  })

  it("a caller's bearer key reaches Anthropic as x-api-key, not as Authorization", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "claude-e2e-model" }, { authorization: `Bearer ${CALLER_KEY}` })
    expect(reply.status).toBe(200)
    const rec = only(fakes.anthropic)
    expect(rec.headers["x-api-key"]).toBe(CALLER_KEY)
    expect(rec.headers.authorization).toBeUndefined()
    expect(JSON.stringify(rec.headers)).not.toContain(CONFIGURED.anthropic)
  })

  it("a caller's bearer key reaches Azure as api-key on the deployment URL", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "my-deployment" }, { authorization: `Bearer ${CALLER_KEY}` })
    expect(reply.status).toBe(200)
    const rec = only(fakes.azure)
    expect(rec.path).toBe("/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21")
    expect(rec.headers["api-key"]).toBe(CALLER_KEY)
    expect(rec.headers.authorization).toBeUndefined()
    expect(JSON.stringify(rec.headers)).not.toContain(CONFIGURED.azure)
  })

  it("a messages-style caller's x-api-key reaches OpenAI as a bearer token", async () => {
    const reply = await post("/v1/messages", { ...messages, model: "gpt-4o" }, { "x-api-key": CALLER_KEY, "anthropic-version": "2023-06-01" })
    expect(reply.status).toBe(200)
    const rec = only(fakes.openai)
    expect(rec.headers.authorization).toBe(`Bearer ${CALLER_KEY}`)
    expect(rec.headers["x-api-key"]).toBeUndefined()
  })

  it("a messages-style caller's x-api-key reaches Anthropic as x-api-key", async () => {
    const reply = await post("/v1/messages", messages, { "x-api-key": CALLER_KEY, "anthropic-version": "2023-06-01" })
    expect(reply.status).toBe(200)
    const rec = only(fakes.anthropic)
    expect(rec.headers["x-api-key"]).toBe(CALLER_KEY)
    expect(rec.headers.authorization).toBeUndefined()
  })

  for (const [label, body, fake, check] of [
    ["OpenAI gets the configured env:: key as a bearer token", chat, () => fakes.openai, (rec: RecordedRequest) => expect(rec.headers.authorization).toBe(`Bearer ${CONFIGURED.openai}`)],
    [
      "Anthropic gets the configured env:: key as x-api-key",
      { ...chat, model: "claude-e2e-model" },
      () => fakes.anthropic,
      (rec: RecordedRequest) => {
        expect(rec.headers["x-api-key"]).toBe(CONFIGURED.anthropic)
        expect(rec.headers.authorization).toBeUndefined()
      }
    ],
    [
      "Azure gets the configured env:: key as api-key",
      { ...chat, model: "my-deployment" },
      () => fakes.azure,
      (rec: RecordedRequest) => {
        expect(rec.headers["api-key"]).toBe(CONFIGURED.azure)
        expect(rec.headers.authorization).toBeUndefined()
      }
    ]
  ] as const) {
    it(`with no caller key, ${label}`, async () => {
      const reply = await post("/v1/chat/completions", body, {})
      expect(reply.status).toBe(200)
      check(only(fake()))
    })
  }

  it("with no caller key on /v1/messages, the configured Anthropic key is used", async () => {
    const reply = await post("/v1/messages", messages, { "anthropic-version": "2023-06-01" })
    expect(reply.status).toBe(200)
    expect(only(fakes.anthropic).headers["x-api-key"]).toBe(CONFIGURED.anthropic)
  })
})

// ---------------------------------------------------------------------------
// response_format and dropped parameters
// ---------------------------------------------------------------------------

describe("response_format to a messages-style provider", () => {
  for (const responseFormat of [
    { type: "json_object" },
    { type: "json_schema", json_schema: { name: "weather", schema: { type: "object", properties: { c: { type: "number" } } } } }
  ]) {
    it(`${responseFormat.type} is refused with 400 in the OpenAI envelope and never sent upstream`, async () => {
      const reply = await post("/v1/chat/completions", { ...chat, model: "claude-e2e-model", response_format: responseFormat }, { authorization: `Bearer ${CALLER_KEY}` })
      expect(reply.status).toBe(400)
      expectOpenAiEnvelope(reply)
      expect(reply.json!.error.type).toBe("invalid_request_error")
      expect(reply.json!.error.message).toContain(responseFormat.type)
      expect(reply.headers.get("x-gw-error-code")).toBeNull()
      expect(fakes.anthropic.requests).toHaveLength(0)
    })
  }

  it("json_object on a streaming request is refused with a plain 400, not a stream", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "claude-e2e-model", stream: true, response_format: { type: "json_object" } })
    expect(reply.status).toBe(400)
    expect(reply.headers.get("content-type")).toContain("application/json")
    expectOpenAiEnvelope(reply)
    expect(fakes.anthropic.requests).toHaveLength(0)
  })

  it("the openai SDK surfaces the refusal as a BadRequestError", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0 })
    const error = await client.chat.completions
      .create({ model: "claude-e2e-model", messages: [{ role: "user", content: "hi" }], response_format: { type: "json_object" } })
      .then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).status).toBe(400)
  })

  it("response_format text is accepted and the request goes through", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "claude-e2e-model", response_format: { type: "text" } })
    expect(reply.status).toBe(200)
    expect(only(fakes.anthropic).json).not.toHaveProperty("response_format")
  })

  it("json_object to an OpenAI provider is forwarded", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, response_format: { type: "json_object" } })
    expect(reply.status).toBe(200)
    expect((only(fakes.openai).json as Json).response_format).toEqual({ type: "json_object" })
  })
})

describe("fields that cannot be carried across", () => {
  const droppedOf = (reply: Reply): string[] =>
    (reply.headers.get("x-gw-dropped-params") ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")

  it("seed and logprobs from an OpenAI caller to an Anthropic model are named in x-gw-dropped-params", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "claude-e2e-model", seed: 42, logprobs: true })
    expect(reply.status).toBe(200)
    expect(droppedOf(reply)).toEqual(expect.arrayContaining(["seed", "logprobs"]))
    const body = only(fakes.anthropic).json as Json
    expect(body).not.toHaveProperty("seed")
    expect(body).not.toHaveProperty("logprobs")
  })

  it("the dropped-params header is also on a streamed answer, read through the SDK", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0 })
    const { data: stream, response } = await client.chat.completions
      .create({ model: "claude-e2e-model", messages: [{ role: "user", content: "hi" }], stream: true, seed: 7 })
      .withResponse()
    for await (const _chunk of stream) {
      // drain
    }
    expect(response.headers.get("x-gw-dropped-params")).toContain("seed")
  })

  it("top_k from an Anthropic caller to an OpenAI model is named in x-gw-dropped-params", async () => {
    const reply = await post("/v1/messages", { ...messages, model: "gpt-4o", top_k: 5 }, { "anthropic-version": "2023-06-01" })
    expect(reply.status).toBe(200)
    expect(droppedOf(reply)).toContain("top_k")
    expect(only(fakes.openai).json).not.toHaveProperty("top_k")
  })

  it("the same fields to a same-format provider are forwarded and nothing is reported dropped", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, seed: 42, logprobs: true })
    expect(reply.status).toBe(200)
    expect(reply.headers.get("x-gw-dropped-params")).toBeNull()
    expect(only(fakes.openai).json).toMatchObject({ seed: 42, logprobs: true })
  })
})

// ---------------------------------------------------------------------------
// Malformed input and x-genai-sdk
// ---------------------------------------------------------------------------

describe("malformed input", () => {
  it("a non-JSON body on /v1/chat/completions is a 400 invalid_request in the OpenAI envelope", async () => {
    const reply = await post("/v1/chat/completions", "{not json", {})
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
    expect(reply.json!.error.type).toBe("invalid_request_error")
    // Gateway-originated, not a provider error: no classification headers.
    expect(reply.headers.get("x-gw-error-code")).toBeNull()
    expect(reply.headers.get("x-gw-upstream-provider")).toBeNull()
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("a non-JSON body on /v1/messages is a 400 in the Anthropic envelope", async () => {
    const reply = await post("/v1/messages", "{not json", {})
    expect(reply.status).toBe(400)
    expectAnthropicEnvelope(reply, "invalid_request_error")
  })

  it("a body without model is a 400 on /v1/chat/completions", async () => {
    const reply = await post("/v1/chat/completions", { messages: chat.messages })
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("a body without model is a 400 on /v1/messages", async () => {
    const reply = await post("/v1/messages", { max_tokens: 10, messages: messages.messages })
    expect(reply.status).toBe(400)
    expectAnthropicEnvelope(reply, "invalid_request_error")
  })

  it("an unknown model is a 404 model_not_found from the gateway, with no upstream classification headers", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "no-such-model" })
    expect(reply.status).toBe(404)
    expectOpenAiEnvelope(reply, "model_not_found")
    expect(reply.json!.error.message).toContain("no-such-model")
    expect(reply.headers.get("x-gw-upstream-provider")).toBeNull()
    expect(reply.headers.get("x-gw-error-code")).toBeNull()
    expect(fakes.openai.requests.length + fakes.anthropic.requests.length + fakes.azure.requests.length).toBe(0)
  })

  it("an unknown model on /v1/messages is a 404 not_found_error in the Anthropic envelope", async () => {
    const reply = await post("/v1/messages", { ...messages, model: "no-such-model" })
    expect(reply.status).toBe(404)
    expectAnthropicEnvelope(reply, "not_found_error")
  })

  it("the openai SDK surfaces an unknown model as NotFoundError", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0 })
    const error = await client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.NotFoundError)
  })

  it("the anthropic SDK surfaces an unknown model as NotFoundError", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: CALLER_KEY, maxRetries: 0 })
    const error = await client.messages.create({ model: "no-such-model", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.NotFoundError)
  })

  it("an empty body is a 400 invalid_request", async () => {
    const reply = await post("/v1/chat/completions", "", {})
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
  })

  it("a JSON array body is a 400 invalid_request", async () => {
    const reply = await post("/v1/chat/completions", [chat], {})
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
  })

  it("a non-boolean stream is a 400", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, stream: "yes" })
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("a completions-style body with invalid messages bound for Anthropic is a 400 from the gateway, never sent", async () => {
    const reply = await post("/v1/chat/completions", { model: "claude-e2e-model", messages: "not a list" })
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
    expect(fakes.anthropic.requests).toHaveLength(0)
  })

  it("a messages-style body without max_tokens bound for OpenAI is a 400 in the Anthropic envelope", async () => {
    const reply = await post("/v1/messages", { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
    expect(reply.status).toBe(400)
    expectAnthropicEnvelope(reply, "invalid_request_error")
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("x-genai-sdk: bogus is a 400", async () => {
    const reply = await post("/v1/chat/completions", chat, { "x-genai-sdk": "bogus" })
    expect(reply.status).toBe(400)
    expectOpenAiEnvelope(reply, "invalid_request")
    expect(reply.json!.error.message).toContain("x-genai-sdk")
    expect(fakes.openai.requests).toHaveLength(0)
  })
})

describe("x-genai-sdk overrides the endpoint's format", () => {
  const messagesBody = {
    model: "gpt-4o",
    max_tokens: 60,
    system: "Be brief.",
    messages: [{ role: "user", content: [{ type: "text", text: "hello from a messages body" }] }]
  }

  it("x-genai-sdk: anthropic on /v1/chat/completions reads a messages-style body and answers a message", async () => {
    const reply = await post("/v1/chat/completions", messagesBody, { "x-genai-sdk": "anthropic" })
    expect(reply.status).toBe(200)
    expect(reply.json).toMatchObject({ type: "message", role: "assistant", stop_reason: "end_turn" })
    expect(reply.json!.content).toEqual([{ type: "text", text: "echo: hello from a messages body" }])
    const body = only(fakes.openai).json as Json
    expect(body.messages[0]).toEqual({ role: "system", content: "Be brief." })
    expect(body.max_tokens ?? body.max_completion_tokens).toBe(60)
    expect(body).not.toHaveProperty("system")
  })

  it("x-genai-sdk: anthropic on /v1/chat/completions streams Anthropic events", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-genai-sdk": "anthropic" },
      body: JSON.stringify({ ...messagesBody, stream: true })
    })
    const text = await res.text()
    expect(res.status).toBe(200)
    expect(text).toContain("event: message_start")
    expect(text).toContain("event: message_stop")
    expect(text).not.toContain("[DONE]")
  })

  it("x-genai-sdk: anthropic on /v1/chat/completions gives errors in the Anthropic envelope", async () => {
    const reply = await post("/v1/chat/completions", "{not json", { "x-genai-sdk": "anthropic" })
    expect(reply.status).toBe(400)
    expectAnthropicEnvelope(reply, "invalid_request_error")
  })

  it("x-genai-sdk: openai on /v1/messages reads a completions-style body and answers a chat.completion", async () => {
    const reply = await post("/v1/messages", { model: "claude-e2e-model", messages: [{ role: "system", content: "S" }, { role: "user", content: "yo" }] }, { "x-genai-sdk": "openai" })
    expect(reply.status).toBe(200)
    expect(reply.json).toMatchObject({ object: "chat.completion" })
    expect(reply.json!.choices[0].message.content).toBe("echo: yo")
    const body = only(fakes.anthropic).json as Json
    expect(body.max_tokens).toBe(4096)
  })

  it("x-genai-sdk: azure on /v1/chat/completions is the completions-style format", async () => {
    const reply = await post("/v1/chat/completions", { ...chat, model: "my-deployment" }, { "x-genai-sdk": "azure" })
    expect(reply.status).toBe(200)
    expect(reply.json).toMatchObject({ object: "chat.completion" })
    const rec = only(fakes.azure)
    expect(Object.keys(rec.headers).filter((h) => h.startsWith("x-genai-"))).toEqual([])
  })
})

// ---------------------------------------------------------------------------
// Request ids
// ---------------------------------------------------------------------------

describe("x-request-id", () => {
  it("every response carries one, and different requests get different ids", async () => {
    const a = await post("/v1/chat/completions", chat)
    const b = await post("/v1/chat/completions", chat)
    expect(a.headers.get("x-request-id")).toBeTruthy()
    expect(b.headers.get("x-request-id")).toBeTruthy()
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"))
    // The gateway's own id, not the provider's (the fake OpenAI sends req_fake… ids).
    expect(a.headers.get("x-request-id")).not.toMatch(/^req_fake/)
  })

  it("a caller's x-request-id is echoed on a success", async () => {
    const reply = await post("/v1/chat/completions", chat, { "x-request-id": "caller-req-0001" })
    expect(reply.headers.get("x-request-id")).toBe("caller-req-0001")
  })

  it("a caller's x-request-id is echoed on a streamed answer", async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "caller-req-stream" },
      body: JSON.stringify({ ...messages, stream: true })
    })
    await res.text()
    expect(res.headers.get("x-request-id")).toBe("caller-req-stream")
  })

  it("error responses carry it too: malformed body, unknown model, unknown route, upstream error", async () => {
    const bad = await post("/v1/chat/completions", "nope", { "x-request-id": "caller-req-bad" })
    const unknown = await post("/v1/messages", { ...messages, model: "nope" }, { "x-request-id": "caller-req-404" })
    const route = await post("/v1/nowhere", {}, { "x-request-id": "caller-req-route" })
    fakes.openai.script({ kind: "error", status: 500 })
    const upstream = await post("/v1/chat/completions", chat, { "x-request-id": "caller-req-500" })
    expect([bad.status, unknown.status, route.status, upstream.status]).toEqual([400, 404, 404, 502])
    expect(bad.headers.get("x-request-id")).toBe("caller-req-bad")
    expect(unknown.headers.get("x-request-id")).toBe("caller-req-404")
    expect(route.headers.get("x-request-id")).toBe("caller-req-route")
    expect(upstream.headers.get("x-request-id")).toBe("caller-req-500")
  })
})

// ---------------------------------------------------------------------------
// The request log line
// ---------------------------------------------------------------------------

describe("request log line", () => {
  /** Runs one request and returns its own log line. */
  const logged = async (run: () => Promise<unknown>): Promise<Json> => {
    const before = gw.requestLogs().length
    await run()
    const logs = await waitForRequestLogs(gw, before + 1)
    return logs[before] as Json
  }

  it("fast path, not streamed: provider, model, attempts, status, usage and finish reason", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0 })
    let usage: OpenAI.CompletionUsage | undefined
    const line = await logged(async () => {
      usage = (await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "count my tokens" }] })).usage
    })
    expect(line).toMatchObject({ provider: "openai", model: "gpt-4o", attempts: 1, status: 200 })
    expect(line.input_tokens).toBe(usage!.prompt_tokens)
    expect(line.output_tokens).toBe(usage!.completion_tokens)
    expect(["end_turn", "stop"]).toContain(line.finish_reason)
  })

  it("fast path, streamed: usage and finish reason are extracted from the forwarded bytes", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0 })
    let usage: OpenAI.CompletionUsage | undefined
    const line = await logged(async () => {
      const stream = client.chat.completions.stream({
        model: "gpt-4o",
        messages: [{ role: "user", content: "Weather? use tool" }],
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }],
        stream_options: { include_usage: true }
      })
      usage = (await stream.finalChatCompletion()).usage
    })
    expect(line).toMatchObject({ provider: "openai", model: "gpt-4o", attempts: 1, status: 200 })
    expect(usage).toBeDefined()
    expect(line.input_tokens).toBe(usage!.prompt_tokens)
    expect(line.output_tokens).toBe(usage!.completion_tokens)
    expect(["tool_use", "tool_calls"]).toContain(line.finish_reason)
  })

  it("fast path, Anthropic stream: usage from message_start and message_delta", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: CALLER_KEY, maxRetries: 0 })
    let message: Anthropic.Message | undefined
    const line = await logged(async () => {
      message = await client.messages.stream({ model: "claude-e2e-model", max_tokens: 100, messages: [{ role: "user", content: "four words right here" }] }).finalMessage()
    })
    expect(line).toMatchObject({ provider: "anthropic", model: "claude-e2e-model", attempts: 1, status: 200 })
    expect(line.input_tokens).toBe(message!.usage.input_tokens)
    expect(line.output_tokens).toBe(message!.usage.output_tokens)
    expect(["end_turn", "stop"]).toContain(line.finish_reason)
  })

  it("fast path, Anthropic not streamed: usage and stop reason from the forwarded JSON", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: CALLER_KEY, maxRetries: 0 })
    let message: Anthropic.Message | undefined
    const line = await logged(async () => {
      message = await client.messages.create({
        model: "claude-e2e-model",
        max_tokens: 100,
        messages: [{ role: "user", content: "Weather? use tool" }],
        tools: [{ name: "get_weather", input_schema: { type: "object", properties: {} } }]
      })
    })
    expect(message!.stop_reason).toBe("tool_use")
    expect(line).toMatchObject({ provider: "anthropic", model: "claude-e2e-model", attempts: 1, status: 200 })
    expect(line.input_tokens).toBe(message!.usage.input_tokens)
    expect(line.output_tokens).toBe(message!.usage.output_tokens)
    expect(["tool_use", "tool_calls"]).toContain(line.finish_reason)
  })

  it("normalized path, streamed: usage and finish reason of the translated stream", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CALLER_KEY, maxRetries: 0 })
    let usage: OpenAI.CompletionUsage | undefined
    const line = await logged(async () => {
      const stream = client.chat.completions.stream({
        model: "claude-e2e-model",
        messages: [{ role: "user", content: "translate me now" }],
        max_tokens: 2,
        stream_options: { include_usage: true }
      })
      usage = (await stream.finalChatCompletion()).usage
    })
    expect(line).toMatchObject({ provider: "anthropic", model: "claude-e2e-model", attempts: 1, status: 200 })
    expect(line.input_tokens).toBe(usage!.prompt_tokens)
    expect(line.output_tokens).toBe(usage!.completion_tokens)
    expect(["max_tokens", "length"]).toContain(line.finish_reason)
  })

  it("normalized path, not streamed", async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: CALLER_KEY, maxRetries: 0 })
    let message: Anthropic.Message | undefined
    const line = await logged(async () => {
      message = await client.messages.create({ model: "gpt-4o", max_tokens: 100, messages: [{ role: "user", content: "hello" }] })
    })
    expect(line).toMatchObject({ provider: "openai", model: "gpt-4o", attempts: 1, status: 200 })
    expect(line.input_tokens).toBe(message!.usage.input_tokens)
    expect(line.output_tokens).toBe(message!.usage.output_tokens)
    expect(["end_turn", "stop"]).toContain(line.finish_reason)
  })

  it("an upstream error is logged with its status, provider and classification", async () => {
    fakes.openai.script({ kind: "error", status: 429, type: "tokens", code: "rate_limit_exceeded" })
    const line = await logged(() => post("/v1/chat/completions", chat))
    expect(line).toMatchObject({ provider: "openai", model: "gpt-4o", attempts: 1, status: 429, error_code: "rate_limit" })
  })

  it("the log line never holds the caller's key", async () => {
    const line = await logged(() => post("/v1/chat/completions", chat, { authorization: `Bearer ${CALLER_KEY}` }))
    expect(line.status).toBe(200)
    expect(JSON.stringify(gw.logs)).not.toContain(CALLER_KEY)
  })
})

describe("request log line with retries", () => {
  let up: FakeUpstream
  let retrying: RunningGateway
  beforeAll(async () => {
    up = await startFakeUpstream({ kind: "openai" })
    retrying = await startGateway({
      providers: { openai: { base_url: `${up.url}/v1`, models: ["gpt-4o"], credential: "none" } },
      routing: { retry: { max_retries: 2, backoff_base_ms: 1 } }
    })
  })
  afterAll(async () => {
    await retrying.close()
    await up.close()
  })

  it("counts every attempt: two upstream 503s then a success is attempts = 3, status 200", async () => {
    up.script({ kind: "error", status: 503, times: 2 })
    const res = await fetch(`${retrying.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chat)
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as Json).choices[0].message.content).toBe("echo: hi")
    expect(up.requests).toHaveLength(3)
    const [line] = await waitForRequestLogs(retrying, 1)
    expect(line).toMatchObject({ provider: "openai", model: "gpt-4o", attempts: 3, status: 200 })
  })
})
