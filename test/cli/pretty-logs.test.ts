/**
 * Log lines for people: on a terminal (a pseudo-terminal made by `script`)
 * the gateway writes one coloured line per request; `log_format = "pretty"`
 * does so on a pipe too, without colours; a pipe with the default `auto` gets
 * the JSON lines, unchanged.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { JsonLog, logFormatFor } from "../../src/infra/log.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { PROJECT_ROOT, startCli, waitFor } from "./process.ts"

let fake: FakeUpstream
let dir: string
beforeAll(async () => {
  fake = await startFakeUpstream({ kind: "openai" })
  dir = mkdtempSync(join(tmpdir(), "gateway-pretty-"))
})
afterAll(async () => {
  await fake.close()
  rmSync(dir, { recursive: true, force: true })
})

const config = (telemetry: string) => {
  const path = join(dir, `gateway-${Math.random().toString(36).slice(2)}.toml`)
  writeFileSync(path, `[server]\nport = 0\n[telemetry]\nenabled = false\n${telemetry}\n[providers.openai]\nbase_url = "${fake.url}/v1"\nmodels = ["gpt-4o"]\ncredential = "none"\n`)
  return path
}

const ESC = "\u001b"
const plain = (text: string) => text.replaceAll(/\u001b\[[0-9;]*m/g, "").replaceAll("\r", "")

/** A chat request through the gateway on `port` with the official client. */
const chat = (port: number) =>
  new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "caller", maxRetries: 0 }).chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "hello" }]
  })

const REQUEST_LINE = /^\d\d:\d\d:\d\d\.\d{3} INFO {2}POST \/v1\/chat\/completions 200 \d+\.\dms gpt-4o → openai gpt-4o tokens \d+→\d+ #[0-9a-f]{8}$/m

describe("pretty logs", () => {
  it("on a terminal: one coloured line per request", async () => {
    const path = config("")
    // `script` runs the gateway on a pseudo-terminal and copies what it writes to our pipe.
    const script = spawn("script", ["-qfec", `${process.execPath} src/main.ts serve ${path}`, "/dev/null"], { cwd: PROJECT_ROOT, env: {}, stdio: ["pipe", "pipe", "pipe"] })
    let out = ""
    script.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
    try {
      await waitFor(() => /listening .*port=\d+/.test(plain(out)), "the listening line")
      const port = Number(/listening .*port=(\d+)/.exec(plain(out))![1])
      await chat(port)
      await waitFor(() => REQUEST_LINE.test(plain(out)), `a pretty request line in:\n${plain(out)}`)
      const line = out.split("\n").find((text) => text.includes("/v1/chat/completions"))!
      expect(line).toContain(`${ESC}[1m${ESC}[32m200${ESC}[0m`)
      expect(out).not.toContain(`{"time"`)
    } finally {
      // The gateway has the pseudo-terminal's session to itself: killing `script` hangs it up, which the
      // gateway takes as SIGHUP (a reload) and keeps serving. It is killed by its own config path (unique
      // to this test), whether or not it is `script`'s child yet.
      try {
        execFileSync("pkill", ["-KILL", "-f", path])
      } catch {
        // already gone
      }
      script.kill("SIGKILL")
    }
  }, 30_000)

  it("log_format = \"pretty\" on a pipe: the same line without colours; auto on a pipe: JSON", async () => {
    const pretty = startCli(["serve", config(`log_format = "pretty"`)], {})
    try {
      await waitFor(() => /listening .*port=\d+/.test(pretty.stdout()), "the listening line")
      await chat(Number(/listening .*port=(\d+)/.exec(pretty.stdout())![1]))
      await waitFor(() => REQUEST_LINE.test(pretty.stdout()), `a pretty request line in:\n${pretty.stdout()}`)
      expect(pretty.stdout()).not.toContain(ESC)
    } finally {
      pretty.child.kill("SIGKILL")
    }
    const json = startCli(["serve", config("")], {})
    try {
      const port = (await json.logLine("listening")).port as number
      await chat(port)
      const line = await json.logLine("request")
      expect(line).toMatchObject({ level: "info", method: "POST", path: "/v1/chat/completions", status: 200, model: "gpt-4o", provider: "openai" })
    } finally {
      json.child.kill("SIGKILL")
    }
  }, 30_000)
})

describe("logFormatFor and the pretty line", () => {
  it("auto: pretty and coloured on a terminal, JSON on a pipe; NO_COLOR turns colours off", () => {
    expect(logFormatFor("auto", { isTTY: true }, {})).toEqual({ pretty: { colour: true } })
    expect(logFormatFor("auto", { isTTY: false }, {})).toBe("json")
    expect(logFormatFor("auto", { isTTY: true }, { NO_COLOR: "1" })).toEqual({ pretty: { colour: false } })
    expect(logFormatFor("pretty", {}, {})).toEqual({ pretty: { colour: false } })
    expect(logFormatFor("json", { isTTY: true }, {})).toBe("json")
  })

  it("names what a person needs of a request, and other records by their fields", () => {
    const writes: Array<string> = []
    const log = new JsonLog("info", { write: (text) => void writes.push(text) }, { flushLines: 1, format: { pretty: { colour: false } }, worker: 2 })
    log.log("info", "request", {
      model: "smart",
      provider: "openai",
      upstream_model: "gpt-4o-mini",
      stream: true,
      attempts: 2,
      input_tokens: 11,
      output_tokens: 7,
      cache: "miss",
      error_code: "rate_limit",
      request_id: "0123456789abcdef",
      method: "POST",
      path: "/v1/chat/completions",
      status: 429,
      duration_ms: 182.44
    })
    log.log("warn", "attempt", { attempt: 1, target: "main", outcome: "rate limit" })
    const [request, attempt] = writes.map((text) => text.trimEnd())
    expect(request).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}w2 POST \/v1\/chat\/completions 429 182\.4ms smart → openai gpt-4o-mini stream tokens 11→7 cache miss attempts 2 rate_limit #01234567$/)
    expect(attempt).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}w2 attempt attempt=1 target=main outcome="rate limit"$/)
  })
})
