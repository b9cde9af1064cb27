/**
 * Running the gateway CLI (`node src/main.ts …`) as a child process with the
 * Node that runs the tests, from the project root, with an explicit
 * environment (never the machine's own).
 */
import { spawn } from "node:child_process"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"

export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url))

export type Env = Record<string, string>

export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** The complete JSON lines of a process's stdout (a line still being written is left out). */
const jsonLines = (stdout: string): Array<Record<string, unknown>> =>
  stdout.split("\n").filter((line) => line.startsWith("{")).flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>]
    } catch {
      return []
    }
  })

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
    /** The JSON log lines on stdout so far, in order. */
    logLines: () => jsonLines(stdout),
    /** Resolves with the first JSON log line on stdout whose `msg` is `msg`. */
    logLine: (msg: string, timeoutMs = 15_000): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        const check = () => {
          const record = jsonLines(stdout).find((line) => line.msg === msg)
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

/** Polls `check` every 25 ms until it holds; fails naming `what` after `timeoutMs`. */
export const waitFor = async (check: () => boolean, what: string, timeoutMs = 15_000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** Runs the CLI to completion. */
export const runCli = (args: ReadonlyArray<string>, env: Env): Promise<Finished> => startCli(args, env).finished

/**
 * A streamed chat completion in flight through the gateway serving on `port`:
 * `fake`, its upstream, sends six chunks 150 ms apart, so the stream is still
 * open when the test signals the process. `read()` waits for the next piece,
 * `rest()` reads to the end; both give the text read.
 */
export const slowStream = async (fake: FakeUpstream, port: number, model = "gpt-4o") => {
  fake.script({ kind: "slowStream", chunks: 6, intervalMs: 150 })
  const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "slowly" }] })
  })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const read = async () => {
    const { done, value } = await reader.read()
    return { done, text: done ? "" : decoder.decode(value, { stream: true }) }
  }
  const rest = async () => {
    let text = ""
    for (let piece = await read(); !piece.done; piece = await read()) text += piece.text
    return text
  }
  return { status: response.status, read, rest }
}
