/** The configuration the project ships (`npm start` serves it) must load cleanly on a machine with no keys set. */
import { Result } from "effect"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { loadSettings } from "../../src/config/index.ts"

const SHIPPED = fileURLToPath(new URL("../../config/gateway.toml", import.meta.url))

describe("config/gateway.toml", () => {
  it("loads with no warnings and no environment", () => {
    const result = loadSettings(SHIPPED, {})
    if (Result.isFailure(result)) throw result.failure
    expect(result.success.warnings).toEqual([])
  })

  it("listens on 127.0.0.1:4000 and reads provider keys from the convention variables", () => {
    const result = loadSettings(SHIPPED, { OPENAI_API_KEY: "sk-o", ANTHROPIC_API_KEY: "sk-a" })
    if (Result.isFailure(result)) throw result.failure
    const { file, providers } = result.success
    expect(file.server).toMatchObject({ host: "127.0.0.1", port: 4000 })
    for (const provider of providers.values()) {
      expect(provider.credential.location).toMatchObject({ kind: "env", convention: true })
      expect(provider.credential.value).toBeDefined()
    }
  })

  it("every target resolves to exactly one provider", () => {
    const result = loadSettings(SHIPPED, {})
    if (Result.isFailure(result)) throw result.failure
    for (const target of result.success.targets.values()) expect(result.success.providers.has(target.providerId)).toBe(true)
  })
})
