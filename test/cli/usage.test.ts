/**
 * The command line itself: `--help` and `--version`, `serve --port/--host`,
 * what a mistyped option does, and `src/main.ts` as the package's `gateway`
 * program (`npx gateway`).
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PROJECT_ROOT, startCli } from "./process.ts"
import type { Env, Finished } from "./process.ts"

/** Each test starts Node processes; on a busy machine that alone can take seconds. */
const PROCESS_TIMEOUT_MS = 60_000
const VERSION = (JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { version: string }).version

let dir: string
let config: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "gateway-usage-"))
  config = join(dir, "gateway.toml")
  writeFileSync(config, "[server]\nhost = \"127.0.0.1\"\nport = 0\n")
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * Runs the CLI; one still running after `ms` (a server it should never have
 * started) is killed and reported as such, so the test fails instead of hanging.
 */
const runBounded = async (args: ReadonlyArray<string>, env: Env = {}, ms = 20_000): Promise<Finished & { readonly stillRunning: boolean }> => {
  const run = startCli(args, env)
  const timer = setTimeout(() => run.child.kill("SIGKILL"), ms)
  const finished = await run.finished
  clearTimeout(timer)
  return { ...finished, stillRunning: finished.signal === "SIGKILL" }
}

describe.concurrent("help and version", () => {
  const commands = [[], ["serve"], ["check-config"], ["batch"], ["snapshot"], ["snapshot", "keygen"], ["snapshot", "seal"], ["snapshot", "publish"]]
  for (const command of commands) {
    it(`gateway ${[...command, "--help"].join(" ")} prints its usage and exits 0`, async () => {
      const finished = await runBounded([...command, "--help"])
      expect(finished.stillRunning).toBe(false)
      expect(finished.code).toBe(0)
      expect(finished.stdout).toMatch(/^usage:/)
      expect(finished.stderr).toBe("")
    }, PROCESS_TIMEOUT_MS)
  }

  it("gateway --version prints the package's version and exits 0", async () => {
    const finished = await runBounded(["--version"])
    expect(finished.code).toBe(0)
    expect(finished.stdout).toBe(`${VERSION}\n`)
  }, PROCESS_TIMEOUT_MS)
})

describe("serve --port and --host", () => {
  it("replace the port and host of the configuration file", async () => {
    // The file names a port that is taken: serving on it would fail.
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve()))
    const taken = (blocker.address() as { port: number }).port
    const path = join(dir, "taken.toml")
    writeFileSync(path, `[server]\nhost = "127.0.0.1"\nport = ${taken}\n`)
    const gateway = startCli(["serve", "--config", path, "--port", "0", "--host", "127.0.0.2"], {})
    try {
      const listening = await gateway.logLine("listening")
      expect(listening.host).toBe("127.0.0.2")
      expect(listening.port).not.toBe(taken)
      expect((await fetch(`http://127.0.0.2:${listening.port as number}/healthz`)).status).toBe(200)
      gateway.child.kill("SIGTERM")
      expect((await gateway.finished).code).toBe(0)
    } finally {
      gateway.child.kill("SIGKILL")
      blocker.close()
    }
  }, PROCESS_TIMEOUT_MS)
})

describe.concurrent("a command line that cannot be run", () => {
  const cases: ReadonlyArray<readonly [string, () => ReadonlyArray<string>]> = [
    ["an unknown option", () => ["--bogus"]],
    ["an unknown option of serve", () => ["serve", "--bogus", "--config", config]],
    ["an unknown option after the file", () => ["serve", config, "--bogus"]],
    ["an unknown option of check-config", () => ["check-config", "--bogus", config]],
    ["a port that is not a number", () => ["serve", "--port", "abc", config]],
    ["a port out of range", () => ["serve", "--port", "70000", config]],
    ["two configuration files", () => ["serve", config, config]]
  ]
  for (const [name, args] of cases) {
    it(`${name} exits 2 with the usage and never starts a server`, async () => {
      const finished = await runBounded(args())
      expect(finished.stillRunning).toBe(false)
      expect(finished.code).toBe(2)
      expect(finished.stderr).toContain("usage:")
      expect(finished.stdout).not.toContain("listening")
    }, PROCESS_TIMEOUT_MS)
  }
})

describe("the gateway program", () => {
  it("src/main.ts runs by itself and is committed with its run bit, so npx gateway leaves the tree clean", () => {
    const git = (...args: Array<string>) => execFileSync("git", args, { cwd: PROJECT_ROOT, encoding: "utf8" })
    expect(git("ls-files", "--stage", "src/main.ts")).toMatch(/^100755 /)
    // The Node that runs the tests first on PATH: the shebang's `env node` finds it.
    const env = { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`, HOME: process.env.HOME ?? dir, npm_config_cache: join(dir, "npm-cache"), npm_config_update_notifier: "false" }
    expect(execFileSync(join(PROJECT_ROOT, "src/main.ts"), ["--version"], { cwd: PROJECT_ROOT, env, encoding: "utf8" })).toBe(`${VERSION}\n`)
    expect(execFileSync("npx", ["--offline", "gateway", "--version"], { cwd: PROJECT_ROOT, env, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })).toBe(`${VERSION}\n`)
    // A mode change, not an edit of the file: what npm's bin linking does to a file committed without its run bit.
    expect(git("diff", "--summary", "--", "src/main.ts")).not.toContain("mode change")
  }, PROCESS_TIMEOUT_MS)
})
