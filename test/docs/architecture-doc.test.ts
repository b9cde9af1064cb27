/**
 * docs/architecture.md is read with the code open, so it must match the code:
 * every service of src/ has a row in its Services table naming each of the
 * service's layers, and every file, folder and code name it cites exists (a
 * rename in src/ that leaves the document behind fails here).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"
import { PROJECT_ROOT } from "../cli/process.ts"

const DOC = readFileSync(join(PROJECT_ROOT, "docs/architecture.md"), "utf8")

/** Files and folders under `dir`, folders with a trailing slash. */
const walk = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? [`${path}/`, ...walk(path)] : [path]
  })

const SRC_ENTRIES = walk(join(PROJECT_ROOT, "src")).map((path) => `${relative(PROJECT_ROOT, path)}${path.endsWith("/") ? "/" : ""}`)
const SRC_FILES = SRC_ENTRIES.filter((path) => path.endsWith(".ts"))
const SRC_TEXT = SRC_FILES.map((path) => ({ path, text: readFileSync(join(PROJECT_ROOT, path), "utf8") }))

/** The lines of one `## ` section of the document. */
const section = (heading: string): string => {
  const start = DOC.indexOf(`\n## ${heading}\n`)
  expect(start).toBeGreaterThan(-1)
  const end = DOC.indexOf("\n## ", start + 1)
  return DOC.slice(start, end === -1 ? undefined : end)
}

/** Every `Context.Service` class src/ exports, with the static layers it defines. */
const servicesOfSrc = () =>
  SRC_TEXT.flatMap(({ text }) =>
    [...text.matchAll(/^export class (\w+) extends Context\.Service<[\s\S]*?^}/gm)].map((match) => ({
      name: match[1],
      layers: [...match[0].matchAll(/^ {2}static readonly (layer\w*)/gm)].map((layer) => layer[1])
    }))
  )

const INLINE_CODE = /`([^`\n]+)`/g
const EFFECT_SRC = join(PROJECT_ROOT, "node_modules/effect/src")
const EFFECT_MODULES = new Map(
  walk(EFFECT_SRC).filter((path) => path.endsWith(".ts")).map((path) => [path.slice(path.lastIndexOf("/") + 1, -3), path])
)

const wordIn = (word: string, text: string): boolean => new RegExp(`(?<![\\w$])${word.replace(/\$/g, "\\$")}(?![\\w$])`).test(text)

/** A cited path: from the repository root, a file of the package entry, or the tail of a path under src/. */
const pathExists = (path: string): boolean => {
  if (existsSync(join(PROJECT_ROOT, path))) return true
  if (path === "model-gateway/testing") return existsSync(join(PROJECT_ROOT, "src/testing.ts"))
  return SRC_ENTRIES.some((entry) => entry.endsWith(`/${path}`) || entry.endsWith(`/${path}/`))
}

/**
 * A cited code name: an export of the effect module it is qualified with
 * (`Effect.retry`), a JavaScript global, or a name src/ spells (with its
 * member in the same file: `ResponseCache.layerOff`).
 */
const nameExists = (name: string): boolean => {
  const [head, ...rest] = name.split(".")
  const effectModule = EFFECT_MODULES.get(head)
  if (effectModule !== undefined && rest.length === 1) {
    const exported = new RegExp(`export (?:declare )?(?:const|function|class|interface|type|namespace) ${rest[0]}\\b`)
    if (exported.test(readFileSync(effectModule, "utf8"))) return true
  }
  if (rest.length === 0 && (effectModule !== undefined || head in globalThis)) return true
  return SRC_TEXT.some(({ text }) => wordIn(head, text) && rest.every((member) => wordIn(member, text)))
}

describe("docs/architecture.md", () => {
  it("has a Services row for every service of src/, naming each of its layers", () => {
    const table = section("Services")
    const rows = new Map(table.split("\n").filter((line) => line.startsWith("| `")).map((line) => [line.slice(3, line.indexOf("`", 3)), line]))
    const services = servicesOfSrc()
    expect(services.length).toBeGreaterThan(5)
    const missing = services.flatMap(({ name, layers }) => {
      const row = rows.get(name)
      if (row === undefined) return [`${name}: no row`]
      return layers.filter((layer) => !row.includes(`\`${name}.${layer}`)).map((layer) => `${name}: ${name}.${layer} not named`)
    })
    expect(missing).toEqual([])
  })

  it("cites only files and folders that exist", () => {
    const cited = new Set<string>()
    for (const match of DOC.matchAll(/(?<![\w/.-])(?:src|test|docs|bench)\/[\w./-]*[\w/]/g)) cited.add(match[0])
    for (const [, code] of DOC.matchAll(INLINE_CODE)) {
      if (/^[\w.-]+(?:\/[\w.-]*)+$|^[\w-]+\.(?:ts|md)$/.test(code) && !code.startsWith("/")) cited.add(code)
    }
    expect(cited.size).toBeGreaterThan(40)
    expect([...cited].filter((path) => !pathExists(path))).toEqual([])
  })

  it("names only functions, types and services that exist", () => {
    const names = new Set<string>()
    for (const [, code] of DOC.matchAll(INLINE_CODE)) {
      const name = code.replace(/\(.*\)$/, "")
      // Code names only: camelCase or PascalCase identifiers, maybe qualified (`Effect.retry`), not config keys or headers.
      if (/\.(?:ts|md)$/.test(name)) continue
      if (/^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$/.test(name) && /[a-z][A-Z]|^[A-Z][a-z]|\.[a-z]/.test(name)) names.add(name)
    }
    expect(names.size).toBeGreaterThan(60)
    expect([...names].filter((name) => !nameExists(name))).toEqual([])
  })
})
