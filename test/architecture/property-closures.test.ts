/**
 * No function literal is assigned to a property in src/ (`obj.f = () => …`,
 * `obj[k] = function …`). V8's parser marks such a literal for the old
 * generation, taking it for setup code; on the request path that closure is
 * born old, outlives its request as garbage until the next full GC, and keeps
 * everything it closes over out of the young generation's collections. One of
 * them (`ctx.stopStream`, set as each stream committed) cost every stream 9 KB
 * promoted and 30 % of its CPU at full load (src/pipeline/forward/commit.ts).
 * Declare the function, then store it: `const stop = () => …; ctx.stopStream = stop`.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const SRC = fileURLToPath(new URL("../../src/", import.meta.url))

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : []
  })

/** Comments blanked (line breaks kept, so lines still count), strings and templates left as they are. */
const withoutComments = (text: string): string =>
  text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, (comment) => comment.replace(/[^\n]/g, " "))

/**
 * A property (`a.b`, `a[b]`) assigned (`=`, `??=`, `||=`, `&&=`) a function
 * literal: `function`, or an arrow with its parameters in parentheses (one
 * level of nesting, an optional return type) or a lone parameter, maybe
 * `async`, maybe in parentheses.
 */
const PROPERTY_CLOSURE =
  /(\.\s*[A-Za-z_$][\w$]*|\])\s*(?:\?\?|\|\||&&)?=(?![=>])\s*\(?\s*(?:async\s+)?(?:function\b|\((?:[^()]|\([^()]*\))*\)\s*(?::[^=;{}]+)?=>|[A-Za-z_$][\w$]*\s*=>)/g

const DECLARATION = /^\s*(?:export\s+)?(?:const|let|var)\s+[A-Za-z_$][\w$]*\s*:/

/** `file:line: target` of every function literal assigned to a property in `text`. */
export const propertyClosures = (file: string, text: string): Array<string> => {
  const code = withoutComments(text)
  const found: Array<string> = []
  for (const match of code.matchAll(PROPERTY_CLOSURE)) {
    // `const f: Shape["name"] = () => …` declares a variable: the `]` is its type's.
    const lineStart = code.lastIndexOf("\n", match.index) + 1
    if (DECLARATION.test(code.slice(lineStart, match.index))) continue
    const line = code.slice(0, match.index).split("\n").length
    found.push(`${file}:${line}: ${match[1].replace(/\s+/g, "")}`)
  }
  return found
}

describe("closures assigned to properties", () => {
  it("finds the pattern it forbids, and not its remedy", () => {
    const text = [
      "ctx.stopStream = () => { stopping = true }",
      "socket.destroySoon = function(this: Socket) { this.end() }",
      "handlers[name] ??= (async (x: number) => x) as Handler",
      "const stop = () => { stopping = true }",
      "ctx.stopStream = stop",
      "run({ write: (chunk) => chunk })",
      "// ctx.stopStream = () => {}",
      "this.onEnd =\n  (): void => { done() }",
      "if (a.b === (c) => c) {}",
      'const announce: Cache<P>["announce"] = (update) => update'
    ].join("\n")
    expect(propertyClosures("example.ts", text)).toEqual([
      "example.ts:1: .stopStream",
      "example.ts:2: .destroySoon",
      "example.ts:3: ]",
      "example.ts:8: .onEnd"
    ])
  })

  it("src/ assigns no function literal to a property", () => {
    const found = sourceFiles(SRC).flatMap((path) => propertyClosures(relative(SRC, path), readFileSync(path, "utf8")))
    expect(found).toEqual([])
  })
})
