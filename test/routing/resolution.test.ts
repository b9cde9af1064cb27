import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { GatewayConfig } from "../../src/config/index.ts"
import { GatewayError } from "../../src/domain/index.ts"
import type { Plan } from "../../src/routing/plan.ts"
import { servableSteps } from "../../src/routing/servable.ts"
import { compileRoutingTable } from "../../src/routing/table.ts"
import { compileProvider } from "../../src/providers/adapter.ts"

const table = compileRoutingTable(GatewayConfig.fromDocument({
  server: {},
  providers: {
    openai: { base_url: "http://openai.test/v1", models: ["gpt-4o", "shared", "text-embedding-3-small"], credential: "none" },
    groq: { kind: "openai", base_url: "http://groq.test/v1", models: ["shared", "llama"], credential: "none" },
    anthropic: { base_url: "http://anthropic.test", models: ["claude", "summarize"], credential: "none" }
  },
  targets: { t1: { model: "gpt-4o" }, t2: { model: "llama" }, t3: { model: "claude" } },
  routes: {
    smart: { endpoint: "chat", models: ["smart", "gpt-4o"], strategy: "fallback", targets: ["t1", "t3"] },
    twin_a: { endpoint: "chat", models: ["twin"], strategy: "single", targets: ["t1"] },
    twin_b: { endpoint: "chat", models: ["twin"], strategy: "single", targets: ["t2"] },
    embed: { endpoint: "embeddings", models: ["embed"], strategy: "single", targets: ["t1"] }
  },
  functions: {
    summarize: { endpoint: "chat", strategy: "single", models: ["claude"] },
    helper: { endpoint: "chat", strategy: "fallback", targets: ["t2", "t3"] }
  }
}), compileProvider)

const plan = (model: string, provider?: string, endpoint: "chat" | "embeddings" = "chat"): Plan => {
  const result = table.resolve(model, provider, endpoint)
  if (Result.isFailure(result)) throw new Error(`unexpected ${result.failure.code}: ${result.failure.message}`)
  return result.success
}
const failure = (model: string, provider?: string, endpoint: "chat" | "embeddings" = "chat"): GatewayError => {
  const result = table.resolve(model, provider, endpoint)
  if (Result.isSuccess(result)) throw new Error(`expected an error, got plan ${result.success.name}`)
  return result.failure
}

describe("model resolution", () => {
  it("explicit forms select a route, a function or a provider's model", () => {
    expect(plan("route::smart").name).toBe("route::smart")
    expect(plan("function::helper").name).toBe("function::helper")
    expect(plan("groq::shared").steps[0].targets[0].provider.id).toBe("groq")
  })
  it("a plain name looks at routes first, then providers, then functions", () => {
    expect(plan("gpt-4o").name).toBe("route::smart") // a route holds it, before the provider
    expect(plan("llama").name).toBe("groq::llama")
    expect(plan("helper").name).toBe("function::helper")
    expect(plan("summarize").name).toBe("anthropic::summarize") // a provider model shadows the function
  })
  it("a name two providers serve is ambiguous: 409 naming the candidates", () => {
    const error = failure("shared")
    expect([error.status, error.code]).toEqual([409, "ambiguous_model"])
    expect(error.message).toContain("openai::shared")
    expect(error.message).toContain("groq::shared")
  })
  it("a name two routes hold is ambiguous too", () => {
    const error = failure("twin")
    expect(error.status).toBe(409)
    expect(error.message).toContain("route::twin_a")
  })
  it("an unknown model is a 404 model_not_found", () => {
    expect([failure("nope").status, failure("nope").code]).toEqual([404, "model_not_found"])
    expect(failure("openai::nope").status).toBe(404)
    expect(failure("route::nope").status).toBe(404)
  })
  it("x-genai-provider restricts the lookup to that provider", () => {
    expect(plan("shared", "groq").name).toBe("groq::shared")
    expect(failure("llama", "openai").status).toBe(404)
  })
  it("x-genai-provider disagreeing with a provider:: prefix is a 400", () => {
    const error = failure("groq::shared", "openai")
    expect([error.status, error.code]).toEqual([400, "invalid_request"])
    expect(error.message).toContain("disagrees")
  })
  it("x-genai-provider naming an unconfigured provider is a 400", () => {
    expect(failure("gpt-4o", "mistral").status).toBe(400)
  })
  it("a route's endpoint type must match the request's endpoint", () => {
    const error = failure("embed", undefined, "chat")
    expect([error.status, error.code]).toEqual([400, "unsupported_for_model"])
    expect(plan("embed", undefined, "embeddings").name).toBe("route::embed")
  })
  it("inline function models resolve to their one provider", () => {
    expect(plan("function::summarize").steps[0].targets[0].provider.id).toBe("anthropic")
  })
})

describe("resolution and target selection fail one way", () => {
  it("a model that resolves to nothing is a failed Result carrying the caller's 404, 409 or 400, never a thrown error", () => {
    const outcomes = [table.resolve("nope", undefined, "chat"), table.resolve("shared", undefined, "chat"), table.resolve("embed", undefined, "chat")]
    expect(outcomes.map((outcome) => Result.isFailure(outcome) ? outcome.failure.status : "plan")).toEqual([404, 409, 400])
  })
  it("a plan whose targets cannot serve the request is a failed Result naming why; one that can keeps its steps", () => {
    const steps = plan("route::smart").steps
    const rerank = servableSteps(steps, { capability: "passthrough" })
    expect(Result.isFailure(rerank) && rerank.failure.code).toBe("unsupported_for_model")
    expect(Result.getOrThrow(servableSteps(steps, { capability: "chat" }))).toBe(steps)
  })
})
