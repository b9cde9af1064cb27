/**
 * docs/library.md stays true: its example is the example test file as it is
 * in the suite, and the library entry exports exactly what the page lists.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const page = readFileSync(new URL("../../docs/library.md", import.meta.url), "utf8")
const entry = readFileSync(new URL("../../src/index.ts", import.meta.url), "utf8")

describe("docs/library.md", () => {
  it("shows the runnable example exactly as it is in the suite", () => {
    const example = readFileSync(new URL("./library.example.test.ts", import.meta.url), "utf8")
    const shown = /## An example[\s\S]*?```ts\n([\s\S]*?)```/.exec(page)?.[1]
    expect(shown).toBe(example)
  })

  it("lists every export of src/index.ts, and src/index.ts only re-exports", () => {
    const exported = [...entry.matchAll(/export (?:type )?\{([^}]*)\}/g)]
      .flatMap((match) => match[1].split(","))
      .map((name) => name.trim().split(/\s+as\s+/).at(-1)!)
      .filter((name) => name !== "")
    const table = page.slice(page.indexOf("## Everything `src/index.ts` exports"))
    const listed = [...table.matchAll(/`(\w+)`/g)].map((match) => match[1])
    expect(exported.filter((name) => !listed.includes(name))).toEqual([])
    const statements = entry.replace(/\/\*\*[\s\S]*?\*\//g, "").split("\n").filter((line) => line.trim() !== "")
    for (const line of statements) expect(line).toMatch(/^(export |  \w+,?$|\} from )/)
  })
})
