/**
 * Running the gateway CLI (`node src/main.ts …`) as a child process with the
 * Node that runs the tests, from the project root, with an explicit
 * environment (never the machine's own).
 */
import { spawn } from "node:child_process"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { fileURLToPath } from "node:url"

export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url))

export type Env = Record<string, string>

export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Starts `node src/main.ts ...args`; stdout and stderr are collected as text. */
export const startCli = (args: ReadonlyArray<string>, env: Env) => {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["src/main.ts", ...args], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
  const finished = new Promise<Finished>((resolve, reject) => {
    child.once("error", reject)
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  return {
    child,
    finished,
    stdout: () => stdout,
    stderr: () => stderr,
    /** Resolves with the first JSON log line on stdout whose `msg` is `msg`. */
    logLine: (msg: string, timeoutMs = 15_000): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        const find = () => {
          for (const line of stdout.split("\n")) {
            if (!line.startsWith("{")) continue
            try {
              const record = JSON.parse(line) as Record<string, unknown>
              if (record.msg === msg) return record
            } catch {
              // a line still being written
            }
          }
          return undefined
        }
        const check = () => {
          const record = find()
          if (record === undefined) return false
          cleanup()
          resolve(record)
          return true
        }
        const onExit = () => {
          if (check()) return
          cleanup()
          reject(new Error(`process exited before logging "${msg}"\nstdout:\n${stdout}\nstderr:\n${stderr}`))
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`no "${msg}" log line within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`))
        }, timeoutMs)
        const onData = () => void check()
        const cleanup = () => {
          clearTimeout(timer)
          child.stdout.off("data", onData)
          child.off("close", onExit)
        }
        child.stdout.on("data", onData)
        child.once("close", onExit)
        check()
      })
  }
}

/** Runs the CLI to completion. */
export const runCli = (args: ReadonlyArray<string>, env: Env): Promise<Finished> => startCli(args, env).finished
