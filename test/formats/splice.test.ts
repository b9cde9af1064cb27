import { describe, expect, it } from "vitest"
import { replaceTopLevelModel } from "../../src/formats/splice.ts"

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes))
const splice = (body: unknown, from: string, to: string) =>
  text(replaceTopLevelModel(new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body)), from, to))

describe("replacing the top-level model without re-serializing", () => {
  it("replaces only the top-level model, leaving every other byte as it was", () => {
    const body = '{"messages":[{"role":"user","content":"the \\"model\\": \\"smart\\" 日本"}],\n  "metadata": {"model": "smart"},\n  "model" :  "smart", "stream":true}'
    expect(splice(body, "smart", "gpt-4o")).toBe(body.replace('"model" :  "smart"', '"model" :  "gpt-4o"'))
    expect(JSON.parse(splice(body, "smart", "gpt-4o")!)).toMatchObject({ model: "gpt-4o", metadata: { model: "smart" } })
  })
  it("escapes the replacement", () => {
    expect(JSON.parse(splice({ model: "a" }, "a", 'x"y')!).model).toBe('x"y')
  })
  it("gives up (the caller re-serializes) when the top-level model is not the expected string", () => {
    expect(splice({ model: "other" }, "smart", "gpt-4o")).toBeUndefined()
    expect(splice({ messages: [] }, "smart", "gpt-4o")).toBeUndefined()
    expect(splice('{"model": "sm', "smart", "gpt-4o")).toBeUndefined()
  })
  it("a nested object before the top-level key is skipped", () => {
    expect(JSON.parse(splice({ options: { model: "smart", nested: [{ model: "smart" }] }, model: "smart" }, "smart", "b")!)).toEqual({
      options: { model: "smart", nested: [{ model: "smart" }] },
      model: "b"
    })
  })
})
