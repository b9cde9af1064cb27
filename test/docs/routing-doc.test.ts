import { Result } from "effect"
import { readFileSync } from "node:fs"
import { parse } from "smol-toml"
import { describe, expect, it } from "vitest"
import { settingsFromDocument } from "../../src/config/index.ts"
import { compileRoutingTable } from "../../src/routing/table.ts"
import { compileProvider } from "../../src/providers/adapter.ts"

const doc = readFileSync(new URL("../../docs/routing.md", import.meta.url), "utf8")
const blocks = [...doc.matchAll(/```toml\n([\s\S]*?)```/g)].map((match) => match[1])
const env = { ANTHROPIC_BACKUP_KEY: "set" }

const tableOf = (index: number) => {
  const result = settingsFromDocument(parse(blocks[index]), env, `docs/routing.md block ${index + 1}`)
  if (Result.isFailure(result)) throw result.failure
  expect(result.success.warnings).toEqual([])
  return compileRoutingTable(result.success, compileProvider)
}

describe("docs/routing.md", () => {
  it("every TOML example is a valid configuration without warnings", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5)
    blocks.forEach((_, index) => tableOf(index))
  })
  it("the ambiguity example behaves as the text says", () => {
    const table = tableOf(0)
    const ambiguous = table.resolve("gpt-4o", undefined, "chat")
    expect(Result.isFailure(ambiguous) && ambiguous.failure.status).toBe(409)
    const route = table.resolve("assistant", undefined, "chat")
    expect(Result.isFailure(route) ? route.failure.message : route.success.name).toBe("route::assistant")
  })
  it("the steps example is a weighted step followed by a fallback step", () => {
    const plan = tableOf(2).resolve("smart", undefined, "chat").pipe(Result.getOrThrow)
    expect(plan.steps.map((step) => [step.strategy, step.targets.map((target) => target.id)])).toEqual([
      ["weighted", ["a", "b"]],
      ["fallback", ["cheap", "last_resort"]]
    ])
  })
  it("the experiment example has the documented variants and overrides", () => {
    const plan = tableOf(3).resolve("function::summarize", undefined, "chat").pipe(Result.getOrThrow)
    expect(plan.variants?.map((variant) => [variant.name, variant.weight, variant.overrides])).toEqual([
      ["fast", 3, { temperature: 0.2 }],
      ["careful", 1, { max_tokens: 1024 }]
    ])
  })
  it("the retry example: the route's table wins and the model timeout beats the provider's", () => {
    const plan = tableOf(4).resolve("reliable", undefined, "chat").pipe(Result.getOrThrow)
    expect(plan.retry).toEqual({ maxRetries: 1, backoffBaseMs: 100 })
    expect(plan.steps[0].targets.map((target) => target.timeoutMs)).toEqual([15000, 30000])
  })
  it("the clouds example falls back from Bedrock to Gemini to OpenAI", () => {
    const plan = tableOf(5).resolve("clouds", undefined, "chat").pipe(Result.getOrThrow)
    expect(plan.steps.map((step) => [step.strategy, step.targets.map((target) => [target.provider.kind, target.provider.family])])).toEqual([
      ["fallback", [["bedrock", "bedrock"], ["gemini", "gemini"], ["openai", "openai"]]]
    ])
  })
  it("the hedging example hedges GPT-4o with Claude after 800 ms", () => {
    const plan = tableOf(6).resolve("quick", undefined, "chat").pipe(Result.getOrThrow)
    expect(plan.steps[0].targets.map((target) => [target.id, target.hedgeAfterMs, target.maxHedges])).toEqual([
      ["gpt", 800, 1],
      ["claude", 800, 1]
    ])
  })
})

describe("docs/testing-your-routing.md", () => {
  it("shows the runnable example test exactly as it is in the suite", () => {
    const page = readFileSync(new URL("../../docs/testing-your-routing.md", import.meta.url), "utf8")
    const example = readFileSync(new URL("./testing-your-routing.example.test.ts", import.meta.url), "utf8")
    const shown = /```ts\n([\s\S]*?)```/.exec(page)?.[1]
    expect(shown).toBe(example)
  })
})
