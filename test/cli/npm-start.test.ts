/**
 * `npm start` as a supervisor (systemd, a container runtime, a process
 * manager) runs it: the supervisor knows only the pid of `npm`, signals that
 * pid, and expects the gateway to stop with it. Several may start from one
 * checkout at once (two instances, or a restart that overlaps the old one).
 *
 * These run the real `npm start`, which builds into the checkout's dist/.
 */
import { spawn } from "node:child_process"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PROJECT_ROOT } from "./process.ts"

/** A build and a start on a busy two-core machine can take a while. */
const TIMEOUT_MS = 120_000
const READY_MS = 90_000

let dir: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "gateway-npm-start-"))
  writeFileSync(join(dir, "gateway.toml"), "[server]\nhost = \"127.0.0.1\"\nport = 0\nshutdown_grace_secs = 5\n")
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Every process below `pid` right now (Linux /proc), as a supervisor's process tree shows them. */
const descendants = (pid: number): Array<number> => {
  const parents = new Map<number, number>()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      // "pid (comm) state ppid …": comm may hold spaces and parentheses.
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // The process ended while we looked.
    }
  }
  const found: Array<number> = []
  for (let frontier = [pid]; frontier.length > 0;) {
    const children = [...parents].filter(([, parent]) => frontier.includes(parent)).map(([child]) => child)
    found.push(...children)
    frontier = children
  }
  return found
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** `npm start` from the checkout, with nothing of this machine's environment but PATH and HOME. */
const npmStart = () => {
  const child: ChildProcessWithoutNullStreams = spawn("npm", ["start"], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir, GATEWAY_CONFIG: join(dir, "gateway.toml"), npm_config_update_notifier: "false" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
  // "exit", not "close": an orphaned gateway would hold the pipes open.
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const port = async (): Promise<number> => {
    const deadline = Date.now() + READY_MS
    for (let match = /"msg":"listening"[^\n]*"port":(\d+)/.exec(output); ; match = /"msg":"listening"[^\n]*"port":(\d+)/.exec(output)) {
      if (match !== null) return Number(match[1])
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not start the gateway:\n${output}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  return { child, exited, port, output: () => output }
}

/** The exit code, or "still running" when the process has not exited within `ms` (bounded, so the test can clean up). */
const exitWithin = (exited: Promise<number | null>, ms: number): Promise<number | null | "still running"> =>
  Promise.race([exited, new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), ms))])

const refuses = async (port: number): Promise<boolean> => {
  // Bounded: a gateway that keeps running past its grace period is the failure.
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`)
    } catch {
      return true
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

describe("npm start under a supervisor", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} sent to npm stops the gateway it started, leaving no process behind`, async () => {
      const start = npmStart()
      let tree: Array<number> = []
      try {
        const port = await start.port()
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
        tree = descendants(start.child.pid!)
        expect(tree.length).toBeGreaterThan(0)

        start.child.kill(signal)
        expect(await exitWithin(start.exited, 30_000)).toBe(0)
        expect(await refuses(port)).toBe(true)
        expect(tree.filter(isAlive)).toEqual([])
      } finally {
        for (const pid of [start.child.pid!, ...tree]) if (isAlive(pid)) process.kill(pid, "SIGKILL")
      }
    }, TIMEOUT_MS)
  }

  it("two gateways started at once from one checkout both start", async () => {
    const starts = [npmStart(), npmStart()]
    try {
      const ports = await Promise.all(starts.map((start) => start.port()))
      for (const port of ports) expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
      for (const start of starts) start.child.kill("SIGTERM")
      expect(await Promise.all(starts.map((start) => exitWithin(start.exited, 30_000)))).toEqual([0, 0])
    } finally {
      for (const start of starts) {
        const pids = [...descendants(start.child.pid!), start.child.pid!]
        for (const pid of pids) if (isAlive(pid)) process.kill(pid, "SIGKILL")
      }
    }
  }, TIMEOUT_MS)
})
