/**
 * The npm package is real: `npm pack`, installed from its tarball into an
 * empty project, runs the examples of docs/library.md and
 * docs/testing-your-routing.md on Node 24 with its types resolved, and its
 * `gateway` command runs. The examples are the suite's own example files
 * with their repository imports ("../../src/index.ts") turned into the
 * package's ("model-gateway"), as a user would write them.
 *
 * The install prefers npm's cache (which `npm ci` filled) to the network;
 * vitest and @effect/vitest come at the versions this repository uses.
 */
import { execFileSync } from "node:child_process"
import type { ExecFileSyncOptions } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PROJECT_ROOT } from "../cli/process.ts"

const TIMEOUT_MS = 180_000
const dir = mkdtempSync(join(tmpdir(), "gateway-package-"))
const app = join(dir, "app")

/** npm and the shebangs run on the Node running the tests; the environment of this vitest run stays out of the nested one. */
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(VITEST|npm_|FORCE_COLOR)/.test(name)))
env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`
env.NO_COLOR = "1"
const run = (file: string, args: ReadonlyArray<string>, cwd: string, options: ExecFileSyncOptions = {}) =>
  execFileSync(file, args, { cwd, env, encoding: "utf8", stdio: "pipe", maxBuffer: 64 * 1024 * 1024, ...options }) as string
const failureText = (error: unknown) => {
  const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message: string }
  return `${message}\nstdout:\n${stdout ?? ""}\nstderr:\n${stderr ?? ""}`
}
/** Runs a command in the app; a failure shows its output, not only its exit code. */
const inApp = (file: string, args: ReadonlyArray<string>) => {
  try {
    return run(file, args, app)
  } catch (error) {
    throw new Error(failureText(error))
  }
}
const versionOf = (name: string) =>
  (JSON.parse(readFileSync(join(PROJECT_ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version
const fromRepo = (path: string) => readFileSync(join(PROJECT_ROOT, path), "utf8")

const libraryPage = fromRepo("docs/library.md")

beforeAll(() => {
  const packed = run("npm", ["pack", "--json", "--pack-destination", dir], PROJECT_ROOT)
  const [{ filename }] = JSON.parse(packed.slice(packed.indexOf("["))) as Array<{ filename: string }>
  mkdirSync(app)
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }))
  inApp("npm", [
    "install",
    "--prefer-offline",
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    join(dir, filename),
    `vitest@${versionOf("vitest")}`,
    `@effect/vitest@${versionOf("@effect/vitest")}`
  ])
  writeFileSync(join(app, "library.example.test.ts"), fromRepo("test/docs/library.example.test.ts").replaceAll("\"../../src/index.ts\"", "\"model-gateway\""))
  writeFileSync(
    join(app, "routing.example.test.ts"),
    fromRepo("test/docs/testing-your-routing.example.test.ts").replaceAll("\"../../src/testing.ts\"", "\"model-gateway/testing\"")
  )
  // The page's first snippet, the import a user starts from.
  writeFileSync(join(app, "import.ts"), /```ts\n([\s\S]*?)```/.exec(libraryPage)![1])
}, TIMEOUT_MS)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("the npm package, installed from its tarball", () => {
  it("loads in plain Node 24, both entries, as docs/library.md imports it", () => {
    expect(readFileSync(join(app, "import.ts"), "utf8")).toContain("from \"model-gateway\"")
    inApp(process.execPath, ["import.ts"])
    const testing = inApp(process.execPath, ["--input-type=module", "-e", "const m = await import(\"model-gateway/testing\"); console.log(typeof m.routingFromToml)"])
    expect(testing.trim()).toBe("function")
  }, TIMEOUT_MS)

  // vitest would transform TypeScript sources under node_modules itself: plain Node, above, is what refuses them.
  it("runs the examples of docs/library.md and docs/testing-your-routing.md", () => {
    const output = inApp(process.execPath, [join("node_modules", "vitest", "vitest.mjs"), "run", "--reporter=verbose"])
    expect(output).toContain("a chat request falls back from OpenAI to Anthropic and answers in the OpenAI format")
    expect(output).toMatch(/Tests +6 passed/)
  }, TIMEOUT_MS)

  it("type-checks the examples against the package's own declarations", () => {
    // A wrong call must fail: the exports are typed, not `any`.
    writeFileSync(join(app, "types.ts"), [
      "import { gatewayLayer } from \"model-gateway\"",
      "import { routingFromToml } from \"model-gateway/testing\"",
      "// @ts-expect-error: a source is { toml }, { file } or { config }",
      "gatewayLayer({ yaml: \"\" })",
      "// @ts-expect-error: the configuration is TOML text",
      "routingFromToml(42)",
      ""
    ].join("\n"))
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "es2024",
        module: "nodenext",
        moduleResolution: "nodenext",
        lib: ["es2024"],
        types: ["node"],
        strict: true,
        noEmit: true,
        verbatimModuleSyntax: true,
        skipLibCheck: true
      },
      include: ["*.ts"]
    }))
    inApp(process.execPath, [join(PROJECT_ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"])
  }, TIMEOUT_MS)

  it("runs its gateway command", () => {
    writeFileSync(join(app, "gateway.toml"), "[server]\n\n[providers.openai]\nmodels = [\"gpt-4o\"]\ncredential = \"none\"\n")
    const output = inApp(join("node_modules", ".bin", "gateway"), ["check-config", "gateway.toml"])
    expect(output).toContain("gpt-4o")
  }, TIMEOUT_MS)
})
