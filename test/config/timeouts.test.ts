/**
 * Timeout resolution as configured (docs/reference/gateway-spec.md §2.7, docs/reference/DESIGN.md): target, then model,
 * then provider, then [defaults.provider], then 30000 ms. Checked on the plans
 * the routing table compiles from the configuration, which is what requests use.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { compileRoutingTable } from "../../src/routing/table.ts"
import { load, withServer } from "./support.ts"
import { compileProvider } from "../../src/providers/adapter.ts"

interface Layers {
  readonly target?: number
  readonly model?: number
  readonly provider?: number
  readonly defaults?: number
}

const timeoutOf = (layers: Layers, selector: "route::r" | "openai::m"): number => {
  const settings = load(
    withServer({
      defaults: { provider: layers.defaults === undefined ? {} : { timeout_ms: layers.defaults } },
      providers: { openai: { models: ["m"], ...(layers.provider === undefined ? {} : { timeout_ms: layers.provider }) } },
      models: layers.model === undefined ? {} : { m: { timeout_ms: layers.model } },
      targets: { t: { model: "m", ...(layers.target === undefined ? {} : { timeout_ms: layers.target }) } },
      routes: { r: { endpoint: "chat", models: ["alias"], strategy: "single", targets: ["t"] } }
    })
  )
  const plan = Result.getOrThrow(compileRoutingTable(settings, compileProvider).resolve(selector, undefined, "chat"))
  return plan.steps[0].targets[0].timeoutMs
}

describe("timeout resolution", () => {
  it("with nothing configured a call waits 30000 ms", () => {
    expect(timeoutOf({}, "route::r")).toBe(30000)
  })

  it("[defaults.provider] timeout_ms replaces the built-in default", () => {
    expect(timeoutOf({ defaults: 4000 }, "route::r")).toBe(4000)
  })

  it("a provider's timeout_ms beats [defaults.provider]", () => {
    expect(timeoutOf({ defaults: 4000, provider: 3000 }, "route::r")).toBe(3000)
  })

  it("a model's timeout_ms beats the provider's", () => {
    expect(timeoutOf({ defaults: 4000, provider: 3000, model: 2000 }, "route::r")).toBe(2000)
  })

  it("a target's timeout_ms beats everything", () => {
    expect(timeoutOf({ defaults: 4000, provider: 3000, model: 2000, target: 1000 }, "route::r")).toBe(1000)
  })

  it("a direct provider::model call uses model, provider, defaults (no target)", () => {
    expect(timeoutOf({ defaults: 4000, provider: 3000, model: 2000, target: 1000 }, "openai::m")).toBe(2000)
    expect(timeoutOf({ defaults: 4000, provider: 3000, target: 1000 }, "openai::m")).toBe(3000)
  })
})
