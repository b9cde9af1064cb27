/**
 * Gateway keys (`[keys]`) in front of the running gateway, driven by the
 * official SDKs: with keys configured every `/v1` request needs
 * `x-gw-authorization: Bearer <key>` (401 `auth` without a known one), a key
 * uses only the models, routes and functions its globs allow (403
 * `forbidden`), `/v1/models` lists what the key may use, and no key ever
 * reaches a log line, an error body or the upstream.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { gatewayWithFakes, startGateway } from "./harness.ts"

const KEYS = {
  GW_KEY_FULL: "gwk-full-5b1d0c2f9e7a4c31",
  GW_KEY_MINI: "gwk-mini-8a3e61f0d2b94c77",
  GW_KEY_ROUTER: "gwk-router-0e9c4d2a7b1f6e35",
  GW_KEY_FN: "gwk-function-c7d25e80a9f3b146"
}
const PROVIDER_KEY = "sk-caller-provider-key-42"

const { fakes, gateway } = gatewayWithFakes({ openai: { kind: "openai" }, anthropic: { kind: "anthropic" } }, ({ openai, anthropic }) => ({
  providers: {
    openai: { base_url: `${openai.url}/v1`, models: ["gpt-4o", "gpt-4o-mini"], credential: "none" },
    anthropic: { base_url: anthropic.url, models: ["claude-e2e"], credential: "none" }
  },
  targets: { mini: { model: "gpt-4o-mini" } },
  routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["mini"] } },
  functions: { summarize: { endpoint: "chat", strategy: "single", targets: ["mini"] } },
  telemetry: { enabled: false },
  keys: {
    full: { key: "env::GW_KEY_FULL" },
    mini: { key: "env::GW_KEY_MINI", models: ["gpt-4o-mini*"] },
    router: { key: "env::GW_KEY_ROUTER", routes: ["sm*"] },
    fn: { key: "env::GW_KEY_FN", functions: ["summar*"] }
  }
}), KEYS)

const openai = (key?: string) =>
  new OpenAI({
    baseURL: `${gateway.url}/v1`,
    apiKey: PROVIDER_KEY,
    maxRetries: 0,
    defaultHeaders: key === undefined ? {} : { "x-gw-authorization": `Bearer ${key}` }
  })
const ask = (key: string | undefined, model: string) =>
  openai(key).chat.completions.create({ model, messages: [{ role: "user", content: "hello" }] })
const refusal = <E>(promise: Promise<unknown>): Promise<E> => promise.then(() => expect.fail("expected a refusal"), (error: E) => error)

describe("who may call", () => {
  it("no key, a malformed header, an unknown key, or the key in Authorization only: 401 auth in the OpenAI format, nothing upstream", async () => {
    const missing = await refusal<InstanceType<typeof OpenAI.AuthenticationError>>(ask(undefined, "gpt-4o"))
    expect(missing).toBeInstanceOf(OpenAI.AuthenticationError)
    expect([missing.status, missing.type, missing.code, missing.headers.get("x-gw-error-code")]).toEqual([401, "authentication_error", "invalid_api_key", "auth"])
    expect(missing.message).toContain("x-gw-authorization")

    const unknown = await refusal<InstanceType<typeof OpenAI.AuthenticationError>>(ask("gwk-nobody-has-this-key", "gpt-4o"))
    expect(unknown).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(unknown.message).not.toContain("gwk-nobody-has-this-key")

    const malformed = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-gw-authorization": KEYS.GW_KEY_FULL },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
    })
    expect(malformed.status).toBe(401)
    expect(await malformed.text()).not.toContain(KEYS.GW_KEY_FULL)

    const standard = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.GW_KEY_FULL, maxRetries: 0 })
    const asStandard = await refusal(standard.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }))
    expect(asStandard).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("an Anthropic caller without a key gets 401 in the Anthropic format", async () => {
    const client = new Anthropic({ baseURL: gateway.url, apiKey: PROVIDER_KEY, maxRetries: 0 })
    const error = await refusal<InstanceType<typeof Anthropic.AuthenticationError>>(
      client.messages.create({ model: "claude-e2e", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
    )
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError)
    expect((error.error as { type?: string; error?: { type?: string } }).error?.type).toBe("authentication_error")
    expect(fakes.anthropic.requests).toHaveLength(0)
  })

  it("a known key is answered; the caller's own Authorization goes upstream, the gateway key does not", async () => {
    const answer = await ask(KEYS.GW_KEY_FULL, "gpt-4o")
    expect(answer.choices[0].message.content).toBe("echo: hello")
    const sent = fakes.openai.requests[0]
    expect(sent.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`)
    expect(JSON.stringify(sent.headers)).not.toContain(KEYS.GW_KEY_FULL)
  })

  it("health checks need no key", async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200)
  })
})

describe("what a key may use", () => {
  it("a model outside the key's globs: 403 forbidden in the caller's format, nothing upstream; one inside: answered", async () => {
    const forbidden = await refusal<InstanceType<typeof OpenAI.PermissionDeniedError>>(ask(KEYS.GW_KEY_MINI, "gpt-4o"))
    expect(forbidden).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect([forbidden.type, forbidden.code, forbidden.headers.get("x-gw-error-code")]).toEqual(["permission_error", "permission_denied", "forbidden"])
    expect(forbidden.message).toContain("gpt-4o")

    const claude = new Anthropic({ baseURL: gateway.url, apiKey: PROVIDER_KEY, maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${KEYS.GW_KEY_MINI}` } })
    const anthropicRefusal = await refusal(claude.messages.create({ model: "claude-e2e", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }))
    expect(anthropicRefusal).toBeInstanceOf(Anthropic.PermissionDeniedError)
    expect(fakes.openai.requests).toHaveLength(0)
    expect(fakes.anthropic.requests).toHaveLength(0)

    const allowed = await ask(KEYS.GW_KEY_MINI, "gpt-4o-mini")
    expect(allowed.model).toBe("gpt-4o-mini")
    // The route "smart" is not a model the key's globs name, nor is the function.
    expect(await refusal(ask(KEYS.GW_KEY_MINI, "smart"))).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect(await refusal(ask(KEYS.GW_KEY_MINI, "summarize"))).toBeInstanceOf(OpenAI.PermissionDeniedError)
  })

  it("route and function globs: a route key uses its route only, a function key its function only", async () => {
    expect((await ask(KEYS.GW_KEY_ROUTER, "smart")).model).toBe("gpt-4o-mini")
    expect(await refusal(ask(KEYS.GW_KEY_ROUTER, "gpt-4o-mini"))).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect((await ask(KEYS.GW_KEY_FN, "summarize")).model).toBe("gpt-4o-mini")
    expect(await refusal(ask(KEYS.GW_KEY_FN, "smart"))).toBeInstanceOf(OpenAI.PermissionDeniedError)
  })

  it("/v1/models lists what the key may use; a model it may not use reads as absent", async () => {
    const ids = async (key: string) => (await openai(key).models.list()).data.map((model) => model.id).sort()
    expect(await ids(KEYS.GW_KEY_FULL)).toEqual(["claude-e2e", "gpt-4o", "gpt-4o-mini", "smart"])
    expect(await ids(KEYS.GW_KEY_MINI)).toEqual(["gpt-4o-mini"])
    expect(await ids(KEYS.GW_KEY_ROUTER)).toEqual(["smart"])
    expect(await refusal(openai(KEYS.GW_KEY_MINI).models.retrieve("gpt-4o"))).toBeInstanceOf(OpenAI.NotFoundError)
    expect((await openai(KEYS.GW_KEY_MINI).models.retrieve("gpt-4o-mini")).id).toBe("gpt-4o-mini")
    expect(await refusal(openai().models.list())).toBeInstanceOf(OpenAI.AuthenticationError)
  })

  it("a key limited to some models may not use files, which name no model; an unlimited key may", async () => {
    expect(await refusal(openai(KEYS.GW_KEY_MINI).files.list())).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect((await openai(KEYS.GW_KEY_FULL).files.list()).data).toEqual([])
  })

  it("no key appears in any log line", async () => {
    await ask(KEYS.GW_KEY_FULL, "gpt-4o")
    await refusal(ask("gwk-wrong-key-in-no-log", "gpt-4o"))
    const logs = JSON.stringify(gateway.logs)
    for (const key of [...Object.values(KEYS), "gwk-wrong-key-in-no-log"]) expect(logs).not.toContain(key)
    expect(gateway.requestLogs().filter((line) => line.status === 200 && String(line.path).startsWith("/v1/")).every((line) => typeof line.key === "string")).toBe(true)
    const serving = gateway.logs.find((line) => line.msg === "serving")
    expect(serving).toMatchObject({ access: "keys", keys: ["full", "mini", "router", "fn"] })
  })
})

describe("a gateway without keys", () => {
  it("is open as before, and its start-up summary says so", async () => {
    const upstream = fakes.openai
    const open = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, models: ["gpt-4o"], credential: "none" } },
      telemetry: { enabled: false }
    })
    try {
      const client = new OpenAI({ baseURL: `${open.url}/v1`, apiKey: PROVIDER_KEY, maxRetries: 0 })
      const answer = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello" }] })
      expect(answer.choices[0].message.content).toBe("echo: hello")
      expect(open.logs.find((line) => line.msg === "serving")).toMatchObject({ access: "open", keys: [] })
    } finally {
      await open.close()
    }
  })
})
