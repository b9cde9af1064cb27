/**
 * The import graph of src/ keeps the shape docs/architecture.md draws: no
 * file imports itself back through others (no circle, type imports and
 * dynamic imports included), and every import between folders points the way
 * the folder table allows. The table is read back and must say what
 * `MAY_IMPORT` says; a new folder or top-level file has no rule until one is
 * written there and here, so the test names it.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))

/** What a stage may use: it never imports another stage or the program that composes them. */
const STAGE = ["domain", "config", "infra"]
/** Everything a request program may use (the layers below the HTTP edge). */
const BELOW_EDGE = ["domain", "config", "infra", "formats", "otlp", "providers", "routing", "tenancy", "pipeline", "pipeline/security", "pipeline/cache", "pipeline/telemetry", "pipeline/metrics", "pipeline/limits", "pipeline/responses"]
const GATEWAY = [...BELOW_EDGE, "http", "startup-summary.ts", "workers.ts"]
const LIBRARY = [...GATEWAY, "gateway.ts"]
const TESTING = [...LIBRARY, "library"]
const BATCH = [...TESTING, "testing.ts", "index.ts"]

/** Unit → units it may import; the table of docs/architecture.md "Folders and import direction". */
const MAY_IMPORT: Record<string, ReadonlyArray<string>> = {
  domain: [],
  config: ["domain"],
  infra: [],
  otlp: [],
  formats: ["domain"],
  providers: ["domain", "config", "formats", "infra"],
  routing: ["domain", "config", "providers"],
  "pipeline/security": STAGE,
  "pipeline/cache": STAGE,
  "pipeline/telemetry": [...STAGE, "otlp"],
  "pipeline/metrics": STAGE,
  "pipeline/limits": STAGE,
  "pipeline/responses": [...STAGE, "pipeline/cache"],
  tenancy: ["domain", "config", "infra", "providers", "routing", "pipeline/security"],
  pipeline: BELOW_EDGE.filter((unit) => unit !== "otlp"),
  http: BELOW_EDGE.filter((unit) => unit !== "infra" && unit !== "otlp"),
  "startup-summary.ts": ["domain", "config"],
  "workers.ts": ["domain", "config", "infra", "startup-summary.ts"],
  "gateway.ts": GATEWAY,
  library: LIBRARY,
  "testing.ts": TESTING,
  "index.ts": [...TESTING, "testing.ts"],
  batch: BATCH,
  "main.ts": [...BATCH, "batch"],
  "undici-modules.d.ts": []
}

/**
 * The folder table of docs/architecture.md read back: unit → the units its
 * "May import" cell allows. A cell lists units in backticks, or says "all of
 * the above" (every earlier row), maybe "but" some; remarks in parentheses and
 * after a semicolon are not rules.
 */
const documentedRules = (): Map<string, Array<string>> => {
  const doc = readFileSync(new URL("../../docs/architecture.md", import.meta.url), "utf8")
  const start = doc.indexOf("\n## Folders and import direction\n")
  const end = doc.indexOf("\n## ", start + 1)
  const rules = new Map<string, Array<string>>()
  const named = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]).filter((unit) => unit !== "effect")
  for (const line of doc.slice(start, end).split("\n").filter((row) => row.startsWith("| `src/"))) {
    const [folder, , allowed] = line.split("|").slice(1, -1).map((cell) => cell.trim())
    const unit = named(folder)[0].slice("src/".length)
    const rule = allowed.replace(/\([^)]*\)/g, "").split(";")[0]
    const units = rule.startsWith("all of the above")
      ? [...rules.keys()].filter((above) => !named(rule.split(" but ")[1] ?? "").includes(above))
      : named(rule)
    rules.set(unit, units)
  }
  return rules
}

/** The unit a src-relative path belongs to: its top folder, a pipeline stage's own folder, or a top-level file. */
const unitOf = (path: string): string => {
  const parts = path.split("/")
  if (parts.length === 1) return path
  if (parts[0] === "pipeline" && parts.length > 2 && parts[1] !== "chat" && parts[1] !== "forward") return `pipeline/${parts[1]}`
  return parts[0]
}

interface Import {
  readonly spec: string
  readonly line: number
}

/**
 * The relative imports of one module: `import`/`export … from` statements
 * (type-only ones too; the formatter starts each at a line's beginning, which
 * keeps comments and strings out), side-effect imports, and `import("…")`
 * calls outside comments.
 */
const importsOf = (source: string): Array<Import> => {
  const found: Array<Import> = []
  const lineAt = (index: number) => source.slice(0, index).split("\n").length
  for (const match of source.matchAll(/^(?:import|export)\b[^"'`;]*?\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm)) {
    found.push({ spec: match[1] ?? match[2], line: lineAt(match.index) })
  }
  for (const match of source.matchAll(/^([^\n]*?)\bimport\(\s*["']([^"']+)["']\s*\)/gm)) {
    const before = match[1].trimStart()
    if (before.startsWith("*") || before.startsWith("//") || before.startsWith("/*")) continue
    found.push({ spec: match[2], line: lineAt(match.index) })
  }
  return found.filter(({ spec }) => spec.startsWith("."))
}

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

interface Edge {
  readonly from: string
  readonly to: string
  readonly line: number
}

const readGraph = () => {
  const files = sourceFiles(SRC).map((path) => relative(SRC, path)).sort()
  const known = new Set(files)
  const edges: Array<Edge> = []
  const unresolved: Array<string> = []
  for (const from of files) {
    for (const { spec, line } of importsOf(readFileSync(join(SRC, from), "utf8"))) {
      const to = relative(SRC, resolve(dirname(join(SRC, from)), spec))
      if (known.has(to)) edges.push({ from, to, line })
      else unresolved.push(`${from}:${line} imports ${spec}, not a file of src/`)
    }
  }
  return { files, edges, unresolved }
}

/** Every strongly connected group of more than one file (or a file importing itself), each as one circle through it. */
const circlesOf = (files: ReadonlyArray<string>, edges: ReadonlyArray<Edge>): Array<Array<string>> => {
  const next = new Map<string, Array<string>>(files.map((file) => [file, []]))
  for (const { from, to } of edges) next.get(from)?.push(to)
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const groups: Array<Array<string>> = []
  const visit = (file: string) => {
    index.set(file, counter)
    low.set(file, counter++)
    stack.push(file)
    onStack.add(file)
    for (const to of next.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(file, Math.min(low.get(file)!, low.get(to)!))
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!))
    }
    if (low.get(file) !== index.get(file)) return
    const group: Array<string> = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      group.push(member)
    } while (member !== file)
    if (group.length > 1 || (next.get(file) ?? []).includes(file)) groups.push(group.sort())
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return groups
}

describe("the import graph of src/", () => {
  const { files, edges, unresolved } = readGraph()

  it("reads static, type-only, multi-line, re-exporting and dynamic imports, and skips comments", () => {
    const source = [
      `import { a } from "./a.ts"`,
      `import type { B } from "../b.ts"`,
      `import {`,
      `  c,`,
      `  d`,
      `} from "./c.ts"`,
      `export * from "./e.ts"`,
      `import "./side.ts"`,
      `import { Effect } from "effect"`,
      `/** loaded with import("./comment.ts") */`,
      `// import("./also-comment.ts")`,
      `const later = () => import("./later.ts")`
    ].join("\n")
    expect(importsOf(source).map(({ spec }) => spec)).toEqual(["./a.ts", "../b.ts", "./c.ts", "./e.ts", "./side.ts", "./later.ts"])
  })

  it("finds a circle through type and dynamic imports", () => {
    const edge = (from: string, to: string) => ({ from, to, line: 1 })
    expect(circlesOf(["a.ts", "b.ts", "c.ts"], [edge("a.ts", "b.ts"), edge("b.ts", "a.ts"), edge("b.ts", "c.ts")])).toEqual([["a.ts", "b.ts"]])
  })

  it("resolves every relative import to a file of src/", () => {
    expect(edges.length).toBeGreaterThan(files.length)
    expect(unresolved).toEqual([])
  })

  it("has no import circle between files", () => {
    expect(circlesOf(files, edges)).toEqual([])
  })

  it("allows in docs/architecture.md's folder table exactly what it enforces, row by row", () => {
    const documented = documentedRules()
    const differing = [...new Set([...Object.keys(MAY_IMPORT), ...documented.keys()])].flatMap((unit) => {
      const enforced = MAY_IMPORT[unit]?.filter((other) => other !== unit).sort()
      const written = documented.get(unit)?.filter((other) => other !== unit).sort()
      return JSON.stringify(enforced) === JSON.stringify(written) ? [] : [`${unit}: table ${JSON.stringify(written)}, test ${JSON.stringify(enforced)}`]
    })
    expect(documented.size).toBeGreaterThan(15)
    expect(differing).toEqual([])
  })

  it("has a rule in docs/architecture.md for every folder and top-level file", () => {
    expect([...new Set(files.map(unitOf))].filter((unit) => MAY_IMPORT[unit] === undefined)).toEqual([])
  })

  it("keeps the OTLP export decoder off the server: only the in-memory test layer reads it", () => {
    expect([...new Set(edges.filter(({ to }) => to === "otlp/decode.ts").map(({ from }) => from))]).toEqual(["pipeline/telemetry/memory.ts"])
  })

  it("reads upload forms only at the HTTP edge: no file outside src/http spools a multipart body", () => {
    const parsers = files.filter((file) => /from "(?:@effect\/platform-node\/NodeMultipart|effect\/http\/Multipart)"/.test(readFileSync(join(SRC, file), "utf8")))
    expect(parsers.filter((file) => unitOf(file) !== "http")).toEqual([])
    expect(parsers.length).toBeGreaterThan(0)
  })

  it("imports only the way the folder table allows: no stage imports another, nothing imports upward", () => {
    const against = edges.flatMap(({ from, to, line }) => {
      const [a, b] = [unitOf(from), unitOf(to)]
      return a === b || (MAY_IMPORT[a] ?? []).includes(b) ? [] : [`${from}:${line} (${a}) imports ${to} (${b})`]
    })
    expect(against).toEqual([])
  })
})
