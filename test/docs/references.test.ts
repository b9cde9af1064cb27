/**
 * Every reference in a comment or document resolves inside the repository:
 * cited reference files exist, nothing cites the specification or the wire
 * notes by a bare name, and relative links in docs/ point at files that exist.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, expect, it } from "vitest"
import { PROJECT_ROOT } from "../cli/process.ts"

const walk = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? walk(path) : [path]
  })

const sources = [...walk(join(PROJECT_ROOT, "src")), ...walk(join(PROJECT_ROOT, "test")), ...walk(join(PROJECT_ROOT, "bench"))]
  .filter((path) => path.endsWith(".ts") && !path.endsWith("references.test.ts"))
const docs = [...readdirSync(join(PROJECT_ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => join(PROJECT_ROOT, "docs", name)), join(PROJECT_ROOT, "README.md")]

const WIRE_NOTES = /(?<![\w/])(?:translation|openai-chat|openai-other|anthropic-messages|other-providers|gateway-spec|DESIGN)\.md/g
const BARE_SPEC = /\bspec \d/g

describe("references resolve inside the repository", () => {
  it("every cited docs/reference file exists", () => {
    const missing: Array<string> = []
    for (const path of [...sources, ...docs]) {
      for (const match of readFileSync(path, "utf8").matchAll(/docs\/reference\/[\w.-]+\.md/g)) {
        if (!existsSync(join(PROJECT_ROOT, match[0]))) missing.push(`${relative(PROJECT_ROOT, path)}: ${match[0]}`)
      }
    }
    expect(missing).toEqual([])
  })

  it("nothing cites the specification or a wire note by a bare name", () => {
    const bare: Array<string> = []
    for (const path of [...sources, ...docs]) {
      const text = readFileSync(path, "utf8")
      for (const pattern of [WIRE_NOTES, BARE_SPEC]) {
        for (const match of text.matchAll(pattern)) bare.push(`${relative(PROJECT_ROOT, path)}: ${match[0]}`)
      }
    }
    expect(bare).toEqual([])
  })

  it("relative links in the documents point at files that exist", () => {
    const broken: Array<string> = []
    for (const path of [...docs, ...walk(join(PROJECT_ROOT, "docs", "reference")).filter((p) => p.endsWith(".md"))]) {
      for (const match of readFileSync(path, "utf8").matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        const target = match[1]
        if (/^[a-z]+:/.test(target)) continue
        if (!existsSync(join(dirname(path), target))) broken.push(`${relative(PROJECT_ROOT, path)}: ${target}`)
      }
    }
    expect(broken).toEqual([])
  })
})
