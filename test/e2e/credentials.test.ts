/**
 * A provider with no credential at all (docs/reference/DESIGN.md "Providers": its convention
 * variable unset, `credential` not `"none"`) and a caller that brings no key: the request is
 * refused at once with a 401 in the caller's format naming the variable to set, and nothing
 * goes upstream unauthenticated; the caller's own key, `credential = "none"` and a fallback to
 * a provider that has a key still go through.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { gatewayWithFakes } from "./harness.ts"

const KEYED = "sk-keyed-provider-0123456789"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, gemini: { kind: "generic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "text-embedding-3-small"] },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"] },
      gemini: { base_url: fakes.gemini.url },
      local: { kind: "openai", base_url: `${fakes.openai.url}/v1`, models: ["local-model"], credential: "none" },
      keyed: { kind: "openai", base_url: `${fakes.openai.url}/v1`, models: ["keyed-model"], credential: "env::KEYED_KEY" }
    },
    targets: { keyless: { model: "gpt-4o" }, keyed: { model: "keyed-model" } },
    routes: { resilient: { endpoint: "chat", models: ["resilient"], strategy: "fallback", targets: ["keyless", "keyed"] } },
    routing: { retry: { max_retries: 0 } }
  }),
  // OPENAI_API_KEY, ANTHROPIC_API_KEY and GEMINI_API_KEY, the convention variables, are unset.
  { KEYED_KEY: KEYED }
)

const openai = (key?: string) =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key ?? "unused", maxRetries: 0, ...(key === undefined ? { defaultHeaders: { authorization: null } } : {}) })
// No key at all: the SDK sends neither `x-api-key` nor `authorization` only when both are explicitly omitted.
const anthropic = () => new Anthropic({ baseURL: gateway.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })
const hello = [{ role: "user" as const, content: "hello" }]
const upstreamCount = () => fakes.openai.requests.length + fakes.anthropic.requests.length + fakes.gemini.requests.length

const expectNamesTheFix = (message: string, variable: string) => {
  expect(message).toContain(variable)
  expect(message).toContain('credential = "none"')
}

describe("a provider without any credential and a caller without a key", () => {
  it("the OpenAI SDK gets an AuthenticationError naming OPENAI_API_KEY and credential = \"none\"; nothing goes upstream", async () => {
    const error = await openai().chat.completions.create({ model: "gpt-4o", messages: hello }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
    const refused = error as InstanceType<typeof OpenAI.AuthenticationError>
    expect([refused.status, refused.type, refused.code]).toEqual([401, "authentication_error", "invalid_api_key"])
    expect(refused.headers.get("x-gw-error-code")).toBe("auth")
    // Nothing reached a provider, so no provider is named as having answered.
    expect(refused.headers.get("x-gw-upstream-provider")).toBeNull()
    expectNamesTheFix((refused.error as { message: string }).message, "OPENAI_API_KEY")
    expect(upstreamCount()).toBe(0)
  })

  it("the Anthropic SDK gets an AuthenticationError naming ANTHROPIC_API_KEY; nothing goes upstream", async () => {
    const error = await anthropic().messages.create({ model: "claude-e2e", max_tokens: 10, messages: hello }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError)
    const refused = error as InstanceType<typeof Anthropic.AuthenticationError>
    expect(refused.status).toBe(401)
    expect(refused.error).toMatchObject({ type: "error", error: { type: "authentication_error" } })
    expectNamesTheFix((refused.error as { error: { message: string } }).error.message, "ANTHROPIC_API_KEY")
    expect(upstreamCount()).toBe(0)
  })

  it("embeddings and files are refused the same way", async () => {
    const embeddings = await openai().embeddings.create({ model: "text-embedding-3-small", input: "hi" }).catch((e: unknown) => e)
    const files = await openai().files.list({}, { headers: { "x-genai-provider": "openai" } }).catch((e: unknown) => e)
    for (const error of [embeddings, files]) {
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
      expectNamesTheFix((error as InstanceType<typeof OpenAI.AuthenticationError>).message, "OPENAI_API_KEY")
    }
    expect(upstreamCount()).toBe(0)
  })

  it("a native passthrough is refused the same way, naming GEMINI_API_KEY", async () => {
    const response = await fetch(`${gateway.url}/v1/gemini/v1beta/models`)
    expect(response.status).toBe(401)
    expect(response.headers.get("x-gw-error-code")).toBe("auth")
    expectNamesTheFix(((await response.json()) as { error: { message: string } }).error.message, "GEMINI_API_KEY")
    expect(upstreamCount()).toBe(0)
  })

  it("a fallback route skips the provider without a key and is answered by the next target, with its key", async () => {
    const answer = await openai().chat.completions.create({ model: "resilient", messages: hello }).withResponse()
    expect(answer.response.status).toBe(200)
    expect(answer.response.headers.get("x-gw-upstream-provider")).toBe("keyed")
    expect(fakes.openai.requests).toHaveLength(1)
    expect(fakes.openai.requests[0].headers.authorization).toBe(`Bearer ${KEYED}`)
  })
})

describe("what still goes upstream", () => {
  it("the caller's own key is sent to the provider without a configured credential", async () => {
    const answer = await openai("sk-caller-own-key").chat.completions.create({ model: "gpt-4o", messages: hello }).withResponse()
    expect(answer.response.status).toBe(200)
    expect(fakes.openai.requests[0].headers.authorization).toBe("Bearer sk-caller-own-key")
  })

  it("a provider with credential = \"none\" is called without any key", async () => {
    const answer = await openai().chat.completions.create({ model: "local-model", messages: hello }).withResponse()
    expect(answer.response.status).toBe(200)
    expect(fakes.openai.requests).toHaveLength(1)
    expect(fakes.openai.requests[0].headers.authorization).toBeUndefined()
  })
})
