/**
 * The production bundle `npm start` runs (`npm run build` → dist/): built
 * from the sources, it serves a request, loads its lazily imported parts when
 * configured (telemetry exports to an OTLP receiver, the Redis cache), and
 * runs the batch command.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BEDROCK_TEST_CREDENTIALS } from "../fixtures/bedrock.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startOtlpReceiver } from "../fixtures/otlp-receiver.ts"
import type { OtlpReceiver } from "../fixtures/otlp-receiver.ts"
import { PROJECT_ROOT } from "./process.ts"

const TIMEOUT_MS = 90_000
const REDIS_URL = `${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/4`
const dir = mkdtempSync(join(tmpdir(), "gateway-bundle-"))
const dist = join(dir, "dist")
let upstream: FakeUpstream
let collector: OtlpReceiver

beforeAll(async () => {
  ;[upstream, collector] = await Promise.all([startFakeUpstream({ kind: "openai" }), startOtlpReceiver()])
  execFileSync(process.execPath, ["scripts/build.ts", "--outdir", dist], { cwd: PROJECT_ROOT, stdio: "pipe" })
}, TIMEOUT_MS)
afterAll(async () => {
  await Promise.all([upstream.close(), collector.close()])
  rmSync(dir, { recursive: true, force: true })
})

const config = () => {
  const path = join(dir, "gateway.toml")
  writeFileSync(path, `[server]
host = "127.0.0.1"
port = 0

[providers.openai]
base_url = "${upstream.url}/v1"
models = ["gpt-4o"]
credential = "none"

[cache]
enabled = true
url = "${REDIS_URL}"
default_mode = "always"
encrypt_salt = "bundle-test"
ttl_seconds = 60

[telemetry]
enabled = true
otlp_endpoint = "${collector.url}"
sample_ratio = 1.0
`)
  return path
}

/** The bundle serving `configPath`, once it printed its listening line. */
const serveBundle = async (configPath: string, nodeFlags: ReadonlyArray<string>, env: NodeJS.ProcessEnv = process.env) => {
  const child = spawn(process.execPath, [...nodeFlags, join(dist, "gateway.mjs"), "serve", "--config", configPath], { cwd: PROJECT_ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
  const deadline = Date.now() + 30_000
  while (!/"port":\d+/.test(stdout)) {
    if (Date.now() > deadline) {
      child.kill("SIGTERM")
      throw new Error(`no listening line:\n${stdout}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return { child, port: /"port":(\d+)/.exec(stdout)![1] }
}

describe("the production bundle", () => {
  it("serves, with the telemetry, cache and metrics chunks loaded on demand", async () => {
    const { child, port } = await serveBundle(config(), ["--max-semi-space-size=4", "--heap-growing-percent=25", "--no-allocation-site-pretenuring"])
    try {
      const prompt = `bundled ${process.pid} ${Date.now()}`
      const ask = () => fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: prompt }] })
      })
      const first = await ask()
      expect(first.status).toBe(200)
      expect(((await first.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toBe(`echo: ${prompt}`)
      expect(first.headers.get("x-gw-cache")).toBe("miss")
      let second = await ask()
      for (let i = 0; i < 50 && second.headers.get("x-gw-cache") !== "hit"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        second = await ask()
      }
      expect(second.headers.get("x-gw-cache")).toBe("hit")
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      expect(metrics).toContain(`gateway_cache_requests_total{result="hit"} 1`)
      await collector.waitFor((c) => c.spans().some((span) => span.name === "POST /v1/chat/completions"), 10_000)
    } finally {
      child.kill("SIGTERM")
      await new Promise((resolve) => child.once("exit", resolve))
    }
  }, TIMEOUT_MS)

  it("serves a Bedrock model: the AWS libraries loaded on demand sign the request and read the binary event stream", async () => {
    const path = join(dir, "bedrock.toml")
    writeFileSync(path, `[server]
host = "127.0.0.1"
port = 0

[providers.bedrock]
base_url = "${upstream.url}"
region = "${BEDROCK_TEST_CREDENTIALS.region}"
auth_type = "sigv4"
models = ["anthropic.claude-bundle-v1:0"]
`)
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
      AWS_SESSION_TOKEN: BEDROCK_TEST_CREDENTIALS.sessionToken
    }
    const { child, port } = await serveBundle(path, [], env)
    try {
      const ask = (stream: boolean) => fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "anthropic.claude-bundle-v1:0", stream, messages: [{ role: "user", content: "from the bundle" }] })
      })
      const whole = await ask(false)
      expect(whole.status).toBe(200)
      expect(((await whole.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toBe("echo: from the bundle")
      const streamed = await ask(true)
      expect(streamed.status).toBe(200)
      const text = await streamed.text()
      expect(text).toContain('"content":" from"')
      expect(text).toContain("data: [DONE]")
    } finally {
      child.kill("SIGTERM")
      await new Promise((resolve) => child.once("exit", resolve))
    }
  }, TIMEOUT_MS)

  it("runs the batch command", async () => {
    const input = join(dir, "in.jsonl")
    writeFileSync(input, `${JSON.stringify({ custom_id: "one", method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4o", messages: [{ role: "user", content: "from the bundle" }] } })}\n`)
    const output = join(dir, "out.jsonl")
    // Not execFileSync: the fake upstream and the collector live in this process and must keep answering.
    const job = spawn(process.execPath, [join(dist, "gateway.mjs"), "batch", input, "--out", output, "--config", config()], { cwd: PROJECT_ROOT, stdio: "ignore" })
    expect(await new Promise((resolve) => job.once("exit", resolve))).toBe(0)
    const [line] = readFileSync(output, "utf8").trim().split("\n").map((text) => JSON.parse(text) as { custom_id: string; response: { status_code: number } })
    expect(line).toMatchObject({ custom_id: "one", response: { status_code: 200 } })
  }, TIMEOUT_MS)

  it("a rebuild never takes the bundle away from a gateway starting meanwhile", async () => {
    const rebuild = spawn(process.execPath, ["scripts/build.ts", "--outdir", dist], { cwd: PROJECT_ROOT, stdio: "ignore" })
    const done = new Promise((resolve) => rebuild.once("exit", resolve))
    let rebuilding = true
    void done.then(() => (rebuilding = false))
    let looks = 0
    let missing = 0
    // Bounded by the rebuild itself, which the test timeout bounds.
    while (rebuilding) {
      looks++
      if (!existsSync(join(dist, "gateway.mjs"))) missing++
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(await done).toBe(0)
    expect(looks).toBeGreaterThan(0)
    expect(missing).toBe(0)
    expect(execFileSync(process.execPath, [join(dist, "gateway.mjs"), "--help"], { cwd: PROJECT_ROOT, encoding: "utf8" })).toContain("usage:")
  }, TIMEOUT_MS)
})
