import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { NotFoundError } from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, waitForRequestLogs } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

let gateway: RunningGateway

beforeAll(async () => {
  gateway = await startGateway({
    server: { max_body_bytes: 1024 },
    providers: {
      openai: { base_url: "http://127.0.0.1:9/v1", models: ["gpt-4o", "shared"], credential: "none" },
      groq: { kind: "openai", base_url: "http://127.0.0.1:9/v1", models: ["shared", "llama"], credential: "none" },
      anthropic: { base_url: "http://127.0.0.1:9", models: ["claude-e2e"], credential: "none" }
    },
    targets: { t: { model: "gpt-4o" } },
    routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["t"] } }
  })
})
afterAll(() => gateway.close())

describe("model discovery (no upstream is called: the providers here are unreachable)", () => {
  it("GET /v1/models lists every configured model with owned_by its provider, and routes' models", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "x", maxRetries: 0 })
    const models = []
    for await (const model of client.models.list()) models.push(model)
    expect(models).toEqual([
      { id: "smart", object: "model", created: 0, owned_by: "gateway" },
      { id: "gpt-4o", object: "model", created: 0, owned_by: "openai" },
      { id: "openai::shared", object: "model", created: 0, owned_by: "openai" },
      { id: "groq::shared", object: "model", created: 0, owned_by: "groq" },
      { id: "llama", object: "model", created: 0, owned_by: "groq" },
      { id: "claude-e2e", object: "model", created: 0, owned_by: "anthropic" }
    ])
  })
  it("GET /v1/models/{id} returns one model, provider::model ids included", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "x", maxRetries: 0 })
    expect(await client.models.retrieve("claude-e2e")).toEqual({ id: "claude-e2e", object: "model", created: 0, owned_by: "anthropic" })
    expect((await client.models.retrieve("groq::shared")).owned_by).toBe("groq")
  })
  it("an unknown model id is a 404 in the OpenAI error shape", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "x", maxRetries: 0 })
    const error = await client.models.retrieve("gpt-9").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(NotFoundError)
    expect((error as NotFoundError).error).toMatchObject({ type: "invalid_request_error", code: "model_not_found", param: "model" })
  })
  it("the Anthropic SDK's models.list gets the Anthropic list shape", async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: "x", maxRetries: 0 })
    const ids = []
    for await (const model of client.models.list()) ids.push([model.type, model.id])
    expect(ids).toContainEqual(["model", "claude-e2e"])
    expect(ids).toHaveLength(6)
  })
})

describe("the HTTP edge", () => {
  it("/healthz and /readyz answer while the gateway runs", async () => {
    expect(await (await fetch(`${gateway.url}/healthz`)).json()).toEqual({ status: "ok" })
    const ready = await fetch(`${gateway.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ status: "ready" })
  })
  it("an unknown path is a JSON 404", async () => {
    const response = await fetch(`${gateway.url}/v1/nope`)
    expect(response.status).toBe(404)
    expect(await response.json()).toMatchObject({ error: { code: "not_found", type: "invalid_request_error" } })
  })
  it("a known path with the wrong method is a JSON 405 with Allow", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`)
    expect(response.status).toBe(405)
    expect(response.headers.get("allow")).toBe("POST")
    expect(await response.json()).toMatchObject({ error: { code: "method_not_allowed" } })
  })
  it("malformed JSON is a 400 in the caller's envelope", async () => {
    const openai = await fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" })
    expect(openai.status).toBe(400)
    expect(await openai.json()).toMatchObject({ error: { code: "invalid_request", type: "invalid_request_error" } })
    const anthropic = await fetch(`${gateway.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: "[1,2]" })
    expect(anthropic.status).toBe(400)
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } })
  })
  it("a body over server.max_body_bytes is a 413", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "x".repeat(4000) }] })
    })
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ error: { code: "request_too_large" } })
  })
  it("every response carries x-request-id: echoed when sent, generated otherwise", async () => {
    const echoed = await fetch(`${gateway.url}/healthz`, { headers: { "x-request-id": "trace-123" } })
    expect(echoed.headers.get("x-request-id")).toBe("trace-123")
    const generated = await fetch(`${gateway.url}/v1/nope`)
    expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const unsafe = await fetch(`${gateway.url}/healthz`, { headers: { "x-request-id": "has spaces and \"quotes\"" } })
    expect(unsafe.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
  })
  it("one JSON log line per request, naming method, path, status and the request id", async () => {
    const before = gateway.requestLogs().length
    await fetch(`${gateway.url}/v1/models/gpt-4o`, { headers: { "x-request-id": "log-me" } })
    const lines = await waitForRequestLogs(gateway, before + 1)
    expect(lines.filter((line) => line.request_id === "log-me")).toEqual([
      expect.objectContaining({ level: "info", msg: "request", method: "GET", path: "/v1/models/gpt-4o", status: 200 })
    ])
  })
})
