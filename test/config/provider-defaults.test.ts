/** What a provider table resolves to when it leaves things out (docs/reference/DESIGN.md "Providers"): kind, base URL, auth, api_version. */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { settingsFromDocument } from "../../src/config/index.ts"
import { load, withServer } from "./support.ts"

const resolve = (id: string, table: Record<string, unknown> = {}, sections: Record<string, unknown> = {}) =>
  load(withServer({ providers: { [id]: { models: ["m"], ...table } }, ...sections })).providers.get(id)!

describe("provider defaults per kind", () => {
  it.each([
    ["openai", "https://api.openai.com/v1", "bearer", "authorization"],
    ["anthropic", "https://api.anthropic.com", "api_key_header", "x-api-key"],
    ["cohere", "https://api.cohere.com", "bearer", "authorization"],
    ["gemini", "https://generativelanguage.googleapis.com", "api_key_header", "x-goog-api-key"]
  ])("[providers.%s] defaults to %s with %s auth (%s)", (kind, baseUrl, authType, authName) => {
    expect(resolve(kind)).toMatchObject({ id: kind, kind, baseUrl, authType, authName })
  })

  it("azure sends the api-key header and defaults api_version to 2024-10-21", () => {
    expect(resolve("azure", { base_url: "https://res.openai.azure.com" })).toMatchObject({
      kind: "azure",
      baseUrl: "https://res.openai.azure.com",
      authType: "api_key_header",
      authName: "api-key",
      apiVersion: "2024-10-21"
    })
  })

  it("azure api_version can be set", () => {
    expect(resolve("azure", { base_url: "https://res.openai.azure.com", api_version: "2025-01-01-preview" }).apiVersion).toBe("2025-01-01-preview")
  })

  it.each(["bedrock", "vertex"])("%s uses bearer auth", (kind) => {
    expect(resolve(kind, { base_url: "https://upstream.example", project: "p", location: "l" })).toMatchObject({ kind, authType: "bearer" })
  })

  it("vertex: the URL from the location (global is aiplatform.googleapis.com); project and location required with models", () => {
    expect(resolve("vertex", { project: "p", location: "europe-west4" }).baseUrl).toBe("https://europe-west4-aiplatform.googleapis.com")
    expect(resolve("vertex", { project: "p", location: "global" }).baseUrl).toBe("https://aiplatform.googleapis.com")
    const refused = settingsFromDocument(withServer({ providers: { vertex: { models: ["gemini-2.5-pro"], location: "us-central1" } } }), {}, "test.toml")
    expect(Result.isFailure(refused) && refused.failure.message).toContain("providers.vertex.project: required")
  })

  it("an OpenAI-compatible server is any id with kind = openai", () => {
    expect(resolve("ollama", { kind: "openai", base_url: "http://127.0.0.1:11434/v1", credential: "none" })).toMatchObject({
      id: "ollama",
      kind: "openai",
      family: "openai",
      baseUrl: "http://127.0.0.1:11434/v1",
      authType: "bearer"
    })
  })

  it("a provider with its own id must give base_url: it never silently points at the kind's vendor", () => {
    const result = settingsFromDocument(withServer({ providers: { groq: { kind: "openai", models: ["llama"] } } }), {}, "test.toml")
    expect(Result.isSuccess(result) ? "loaded" : result.failure.message).toBe(
      'invalid configuration in test.toml: providers.groq.base_url: required for provider "groq" (only a provider named after its kind has a default URL)'
    )
  })

  it("kind may also be written when the id is a kind name", () => {
    expect(resolve("anthropic", { kind: "anthropic" }).kind).toBe("anthropic")
  })

  it("models defaults to an empty list (passthrough-only providers)", () => {
    const settings = load(withServer({ providers: { cohere: {} } }))
    expect(settings.providers.get("cohere")?.models).toEqual([])
  })
})

describe("auth overrides", () => {
  it("a provider's auth_type and auth_header_name replace the kind's", () => {
    expect(resolve("openai", { auth_type: "api_key_header", auth_header_name: "x-portal-key" })).toMatchObject({
      authType: "api_key_header",
      authName: "x-portal-key"
    })
  })

  it("query_param sends the key as ?api_key= unless auth_header_name names the parameter", () => {
    expect(resolve("openai", { auth_type: "query_param" })).toMatchObject({ authType: "query_param", authName: "api_key" })
    expect(resolve("openai", { auth_type: "query_param", auth_header_name: "key" })).toMatchObject({ authType: "query_param", authName: "key" })
  })

  it("[defaults.provider] auth_type applies to providers that set none", () => {
    const defaults = { defaults: { provider: { auth_type: "query_param" } } }
    expect(resolve("openai", {}, defaults).authType).toBe("query_param")
    expect(resolve("openai", { auth_type: "bearer" }, defaults).authType).toBe("bearer")
  })

  it("a provider's timeout_ms is kept for the timeout resolution", () => {
    expect(resolve("openai", { timeout_ms: 1234 }).timeoutMs).toBe(1234)
    expect(resolve("openai").timeoutMs).toBeUndefined()
  })
})
