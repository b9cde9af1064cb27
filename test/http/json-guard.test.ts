import { describe, expect, it } from "vitest"
import { jsonProblem, MAX_JSON_DEPTH } from "../../src/http/json-guard.ts"

const nestedArrays = (depth: number, leaf: unknown): unknown => {
  let value = leaf
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

describe("jsonProblem: what JSON.parse accepts and the gateway refuses", () => {
  it("a number out of range anywhere in the body: in an object of an array of a message's parts", () => {
    const body = JSON.parse('{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"weight":1e400}]}]}')
    expect(jsonProblem(body)).toMatch(/out of range/)
    expect(jsonProblem(JSON.parse('{"a":[1,2,[3,-1e999]]}'))).toMatch(/out of range/)
    expect(jsonProblem(JSON.parse("-1e999"))).toMatch(/out of range/)
  })

  it("depth counts objects and arrays, not the values in them: the limit is read, one more is refused", () => {
    expect(jsonProblem(nestedArrays(MAX_JSON_DEPTH, 1))).toBeUndefined()
    expect(jsonProblem(nestedArrays(MAX_JSON_DEPTH, {}))).toMatch(/more than 128 levels deep/)
    expect(jsonProblem(nestedArrays(MAX_JSON_DEPTH + 1, "x"))).toMatch(/more than 128 levels deep/)
    // A body far deeper than the limit is refused without walking it all (no stack overflow).
    expect(jsonProblem(JSON.parse("[".repeat(20_000) + "]".repeat(20_000)))).toMatch(/levels deep/)
  })

  it("an ordinary request, with a key named __proto__, has no problem", () => {
    const body = JSON.parse('{"model":"m","temperature":0.2,"messages":[{"role":"user","content":"hi"}],"metadata":{"__proto__":{"x":1}}}')
    expect(jsonProblem(body)).toBeUndefined()
    expect(jsonProblem(JSON.parse('{"metadata":{"__proto__":{"x":1e400}}}'))).toMatch(/out of range/)
  })
})
