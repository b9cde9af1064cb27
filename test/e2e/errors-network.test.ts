/**
 * Upstream failures below HTTP: a dropped connection, a refused connection, an upstream
 * slower than `timeout_ms`, and which `timeout_ms` applies (model, then provider, then
 * `[defaults.provider]`).
 */
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { closedPort } from "../fixtures/otlp-receiver.ts"
import { gatewayWithFakes, startGateway, waitForRequestLogs } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

type Json = Record<string, any>
type Family = "openai" | "anthropic"

interface Reply {
  status: number
  headers: Headers
  text: string
  json: Json | undefined
}

const post = async (base: string, caller: Family, model: string, stream = false): Promise<Reply> => {
  const path = caller === "openai" ? "/v1/chat/completions" : "/v1/messages"
  const body =
    caller === "openai"
      ? { model, messages: [{ role: "user", content: "hi" }], stream }
      : { model, max_tokens: 20, messages: [{ role: "user", content: "hi" }], stream }
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(caller === "anthropic" ? { "anthropic-version": "2023-06-01" } : {}) },
    body: JSON.stringify(body)
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

const expectEnvelope = (reply: Reply, caller: Family) => {
  expect(reply.json, reply.text).toBeDefined()
  if (caller === "openai") {
    expect(reply.json).not.toHaveProperty("type")
    expect(reply.json!.error).toMatchObject({ type: "api_error", code: "upstream_error" })
  } else {
    expect(reply.json).toMatchObject({ type: "error", error: { type: "api_error" } })
  }
  expect(typeof reply.json!.error.message).toBe("string")
}

describe("network failures and timeouts", () => {
  const { fakes, gateway: gw } = gatewayWithFakes(
    { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
    async (fakes) => ({
      providers: {
        openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "none", timeout_ms: 300 },
        anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model"], credential: "none", timeout_ms: 300 },
        // A port that was just listening and is now closed: connections are refused.
        closed: { kind: "openai", base_url: `http://127.0.0.1:${await closedPort()}/v1`, models: ["gpt-closed"], credential: "none", timeout_ms: 300 }
      },
      routing: { retry: { max_retries: 0 } }
    })
  )

  const cases: Array<{ caller: Family; provider: Family }> = [
    { caller: "openai", provider: "openai" },
    { caller: "openai", provider: "anthropic" },
    { caller: "anthropic", provider: "anthropic" },
    { caller: "anthropic", provider: "openai" }
  ]
  const fakeOf = (p: Family) => (p === "openai" ? fakes.openai : fakes.anthropic)
  const modelOf = (p: Family) => (p === "openai" ? "gpt-4o" : "claude-e2e-model")

  for (const { caller, provider } of cases) {
    it(`${caller} → ${provider}: a connection dropped before the response is 502 upstream`, async () => {
      fakeOf(provider).script({ kind: "drop" })
      const reply = await post(gw.url, caller, modelOf(provider))
      expect(reply.status).toBe(502)
      expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
      expect(reply.headers.get("x-gw-upstream-provider")).toBe(provider)
      expect(reply.headers.get("retry-after")).toBeNull()
      expectEnvelope(reply, caller)
      expect(fakeOf(provider).requests).toHaveLength(1)
    })

    it(`${caller} → ${provider}: an upstream slower than timeout_ms is 504 upstream`, async () => {
      fakeOf(provider).script({ kind: "delay", ms: 1500 })
      const reply = await post(gw.url, caller, modelOf(provider))
      expect(reply.status).toBe(504)
      expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
      expect(reply.headers.get("x-gw-upstream-provider")).toBe(provider)
      expectEnvelope(reply, caller)
      // The gateway gave up on the upstream request rather than leaving it open.
      await fakeOf(provider).waitForClosedEarly(1, 3000)
    })
  }

  /** A 200 head at once, half a JSON body, then silence well past timeout_ms. */
  const stalledBody = (): Parameters<FakeUpstream["script"]>[0] => ({
    kind: "custom",
    handle: async ({ res, wait }) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write('{"id":"chatcmpl-stall","object":"chat.completion",')
      if (await wait(5000)) res.end('"choices":[]}')
    }
  })

  it("a non-streamed answer whose body stalls past timeout_ms on the normalized path is a 504, never a success", async () => {
    fakes.openai.script(stalledBody())
    const reply = await post(gw.url, "anthropic", "gpt-4o")
    expect(reply.status).toBe(504)
    expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
    expectEnvelope(reply, "anthropic")
    await fakes.openai.waitForClosedEarly(1, 3000)
  })

  it("a non-streamed answer whose body stalls past timeout_ms on the fast path makes the SDK call fail, never succeed", async () => {
    fakes.openai.script(stalledBody())
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "k", maxRetries: 0, timeout: 5000 })
    const outcome = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }).then(
      (completion) => ({ ok: true as const, completion }),
      (error: unknown) => ({ ok: false as const, error })
    )
    // The 200 head was already forwarded: the gateway can only cut the connection, which the SDK reports as a failure.
    expect(outcome.ok).toBe(false)
    await fakes.openai.waitForClosedEarly(1, 3000)
  })

  it("a connection dropped as soon as the headers arrive is 502 upstream", async () => {
    fakes.openai.script({ kind: "drop", immediate: true })
    const reply = await post(gw.url, "openai", "gpt-4o")
    expect(reply.status).toBe(502)
    expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
    expectEnvelope(reply, "openai")
  })

  it("a streaming request whose upstream never answers is a 504 JSON error, not a stream", async () => {
    fakes.anthropic.script({ kind: "hang" })
    const reply = await post(gw.url, "openai", "claude-e2e-model", true)
    expect(reply.status).toBe(504)
    expect(reply.headers.get("content-type")).toContain("application/json")
    expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
    expectEnvelope(reply, "openai")
  })

  it("a refused connection is 502 upstream, without x-gw-upstream-provider (the upstream was never reached)", async () => {
    const reply = await post(gw.url, "openai", "gpt-closed")
    expect(reply.status).toBe(502)
    expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
    expect(reply.headers.get("x-gw-upstream-provider")).toBeNull()
    expectEnvelope(reply, "openai")
  })

  it("the openai SDK surfaces a timeout as a 504 APIError", async () => {
    fakes.openai.script({ kind: "delay", ms: 1500 })
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "k", maxRetries: 0 })
    const error = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(504)
  })

  it("a timeout is logged with status 504 and error_code upstream", async () => {
    fakes.openai.script({ kind: "delay", ms: 1500 })
    const before = gw.requestLogs().length
    await post(gw.url, "openai", "gpt-4o")
    const logs = await waitForRequestLogs(gw, before + 1)
    expect(logs[before]).toMatchObject({ status: 504, error_code: "upstream", provider: "openai", model: "gpt-4o" })
  })
})

/**
 * Which timeout applies. The upstream always answers after ~600 ms; a 200 ms timeout
 * fails the request (504) and a 3000 ms timeout lets it through (200). The outcome
 * shows which setting won, without measuring time.
 */
describe("timeout resolution: model, then provider, then [defaults.provider]", () => {
  let up: FakeUpstream
  let gw: RunningGateway
  beforeAll(async () => {
    up = await startFakeUpstream({ kind: "openai" })
    up.setDefault({ kind: "delay", ms: 600 })
    const base = `${up.url}/v1`
    gw = await startGateway({
      defaults: { provider: { timeout_ms: 200 } },
      providers: {
        plain: { kind: "openai", base_url: base, models: ["m-default", "m-model-long"], credential: "none" },
        patient: { kind: "openai", base_url: base, models: ["m-provider-long", "m-model-short"], credential: "none", timeout_ms: 3000 },
        hasty: { kind: "openai", base_url: base, models: ["m-provider-short", "m-model-over-provider"], credential: "none", timeout_ms: 200 }
      },
      models: {
        "m-model-long": { timeout_ms: 3000 },
        "m-model-short": { timeout_ms: 200 },
        "m-model-over-provider": { timeout_ms: 3000 }
      },
      routing: { retry: { max_retries: 0 } }
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const cases: Array<[string, string, number]> = [
    ["[defaults.provider] timeout_ms applies when nothing else is set", "m-default", 504],
    ["a provider timeout_ms overrides a shorter [defaults.provider] timeout_ms", "m-provider-long", 200],
    ["a provider timeout_ms shorter than the upstream fails the request", "m-provider-short", 504],
    ["a model timeout_ms overrides a longer provider timeout_ms", "m-model-short", 504],
    ["a model timeout_ms overrides a shorter provider timeout_ms", "m-model-over-provider", 200],
    ["a model timeout_ms overrides a shorter [defaults.provider] timeout_ms", "m-model-long", 200]
  ]
  for (const [name, model, status] of cases) {
    it(`${name} (${model} → ${status})`, async () => {
      const reply = await post(gw.url, "openai", model)
      expect(reply.status, reply.text).toBe(status)
      if (status === 504) expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
      else expect(reply.json!.choices[0].message.content).toBe("echo: hi")
    })
  }
})
