/**
 * The `serving` line at start: providers with their models and whether a
 * credential was found (never the credential), routes, functions and the
 * stages that are on; providers whose convention variable is unset are named.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const SECRET = "sk-summary-secret-value-1234"

let gateway: RunningGateway

beforeAll(async () => {
  gateway = await startGateway({
    providers: {
      openai: { base_url: "http://127.0.0.1:9/v1", models: ["gpt-4o", "gpt-4o-mini"] },
      anthropic: { base_url: "http://127.0.0.1:9", models: ["claude-e2e"] },
      local: { kind: "openai", base_url: "http://127.0.0.1:9/v1", models: ["llama"], credential: "none" }
    },
    targets: { t: { model: "gpt-4o" } },
    routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["t"] } },
    functions: { summarize: { endpoint: "chat", strategy: "single", targets: ["t"] } },
    security: { enabled: true },
    telemetry: { enabled: false }
  }, { OPENAI_API_KEY: SECRET })
})
afterAll(() => gateway.close())

describe("the start-up summary", () => {
  it("one serving line names providers, models, credential found or unset, routes, functions and stages on; never a key", () => {
    const lines = gateway.logs.filter((line) => line.msg === "serving")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: "info",
      providers: [
        { id: "openai", kind: "openai", models: ["gpt-4o", "gpt-4o-mini"], credential: expect.stringMatching(/^env::OPENAI_API_KEY .*\[set/) },
        { id: "anthropic", kind: "anthropic", models: ["claude-e2e"], credential: expect.stringMatching(/^env::ANTHROPIC_API_KEY .*\[unset\]/) },
        { id: "local", kind: "openai", models: ["llama"], credential: "none" }
      ],
      credential_unset: ["anthropic (ANTHROPIC_API_KEY)"],
      routes: ["smart"],
      functions: ["summarize"],
      stages: ["guardrails"]
    })
    expect(JSON.stringify(gateway.logs)).not.toContain(SECRET)
  })
})
