/**
 * A plan is compiled with what every request reads of it (docs/architecture.md
 * "Services"): which caller formats its targets speak natively, and its retry
 * schedule. A request looks them up; nothing is derived or cached per request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import { GatewayConfig } from "../../src/config/index.ts"
import { UpstreamError } from "../../src/domain/index.ts"
import { compileProvider } from "../../src/providers/adapter.ts"
import { buildCatalog } from "../../src/routing/catalog.ts"
import type { Plan } from "../../src/routing/plan.ts"
import { compileRoutingTable } from "../../src/routing/table.ts"

const table = compileRoutingTable(GatewayConfig.fromDocument({
  server: {},
  routing: { retry: { max_retries: 1, backoff_base_ms: 100 } },
  providers: {
    openai: { base_url: "http://openai.test/v1", models: ["gpt-4o"], credential: "none" },
    anthropic: { base_url: "http://anthropic.test", models: ["claude"], credential: "none" },
    cohere: { base_url: "http://cohere.test", models: ["rerank-v3"], credential: "none" }
  },
  targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude" } },
  routes: {
    mixed: { endpoint: "chat", models: ["mixed"], strategy: "fallback", targets: ["gpt", "claude"], retry: { max_retries: 3, backoff_base_ms: 100 } }
  },
  functions: {
    ab: { endpoint: "chat", strategy: "experiment", variants: { a: { model: "gpt-4o", weight: 1 }, b: { model: "claude", weight: 1 } } }
  }
}), compileProvider)

const planOf = (model: string): Plan => {
  const plan = table.resolve(model, undefined, "chat")
  if (Result.isFailure(plan)) throw new Error(plan.failure.message)
  return plan.success
}

const rateLimited = new UpstreamError({
  reason: "rate_limit",
  upstreamStatus: 429,
  provider: "openai",
  family: "openai",
  message: "slow down",
  timedOut: false,
  reached: true
})

describe("a compiled plan", () => {
  it("knows which caller formats every one of its targets speaks natively, per plan and per experiment variant", () => {
    assert.deepStrictEqual(planOf("gpt-4o").shape.allNative.openai, true)
    assert.deepStrictEqual(planOf("gpt-4o").shape.allNative.anthropic, false)
    assert.deepStrictEqual(planOf("mixed").shape.allNative, { openai: false, anthropic: false, responses: false })
    assert.strictEqual(planOf("mixed").shape.hasNonChat, false)
    assert.strictEqual(planOf("rerank-v3").shape.hasNonChat, true)
    const variants = planOf("function::ab").variants ?? []
    assert.deepStrictEqual(variants.map((variant) => variant.shape.allNative.anthropic), [false, true])
  })

  it.effect("retries under its own schedule: the route's max_retries, not the default's", () =>
    Effect.gen(function*() {
      let attempts = 0
      const failing = Effect.suspend(() => {
        attempts++
        return Effect.fail(rateLimited)
      })
      const fiber = yield* Effect.forkChild(Effect.flip(Effect.retry(failing, { schedule: planOf("mixed").schedule })))
      for (let i = 0; i < 100 && fiber.pollUnsafe() === undefined; i++) yield* TestClock.adjust(1000)
      assert.isDefined(fiber.pollUnsafe(), "the retries end within 100 s of virtual time")
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error.reason, "rate_limit")
      assert.strictEqual(attempts, 4)
    }))
})

describe("a compiled catalog", () => {
  it("carries the GET /v1/models bodies in both SDK shapes, rendered once with it", () => {
    const catalog = buildCatalog(GatewayConfig.fromDocument({
      server: {},
      providers: { openai: { base_url: "http://openai.test/v1", models: ["gpt-4o"], credential: "none" } }
    }))
    assert.deepStrictEqual(JSON.parse(catalog.lists.openAi), { object: "list", data: [{ id: "gpt-4o", object: "model", created: 0, owned_by: "openai" }] })
    assert.deepStrictEqual(JSON.parse(catalog.lists.anthropic).data.map((model: { id: string }) => model.id), ["gpt-4o"])
  })
})
