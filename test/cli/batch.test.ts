/**
 * `gateway batch` as an operator runs it (real processes, `node src/main.ts`)
 * against fake providers on loopback: a mixed file gives the expected output
 * lines in each format's documented shape; a job killed in the middle and run
 * again finishes without redoing completed lines; Ctrl-C leaves a valid output.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { runCli, startCli } from "./process.ts"

const PROCESS_TIMEOUT_MS = 60_000
const env = { PATH: process.env.PATH ?? "" }
const dir = mkdtempSync(join(tmpdir(), "gateway-batch-"))
let good: FakeUpstream
let down: FakeUpstream
let slow: FakeUpstream

beforeAll(async () => {
  ;[good, down, slow] = await Promise.all([
    startFakeUpstream({ kind: "openai" }),
    startFakeUpstream({ kind: "openai" }),
    startFakeUpstream({ kind: "openai", latencyMs: 30 })
  ])
  down.script({ kind: "error", status: 503, times: Infinity })
})
afterAll(async () => {
  await Promise.all([good.close(), down.close(), slow.close()])
  rmSync(dir, { recursive: true, force: true })
})

const write = (name: string, content: string) => {
  const path = join(dir, name)
  writeFileSync(path, content)
  return path
}

const config = (name: string, upstream: string) =>
  write(name, `[server]

[providers.openai]
base_url = "${upstream}/v1"
models = ["gpt-4o", "text-embedding-3-small"]
credential = "none"

[providers.flaky]
kind = "openai"
base_url = "${down.url}/v1"
models = ["flaky-model"]
credential = "none"

[targets.first]
model = "flaky-model"

[targets.second]
model = "gpt-4o"

[routes.smart]
endpoint = "chat"
models = ["smart"]
strategy = "fallback"
targets = ["first", "second"]

[routes.smart.retry]
max_retries = 0

[security]
enabled = true

[telemetry]
enabled = false
`)

const lines = (path: string) => readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as Record<string, any>)

describe("gateway batch", () => {
  it("a mixed file: each line answered in its own format, failures and bad lines recorded, nothing stops the job", async () => {
    const input = write("mixed.jsonl", [
      { custom_id: "chat-1", method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4o", messages: [{ role: "user", content: "hello batch" }] } },
      { custom_id: "embed-1", method: "POST", url: "/v1/embeddings", body: { model: "text-embedding-3-small", input: "embed this" } },
      { custom_id: "claude-1", params: { model: "gpt-4o", max_tokens: 64, messages: [{ role: "user", content: "hello from anthropic format" }] } },
      { custom_id: "failover-1", method: "POST", url: "/v1/chat/completions", body: { model: "smart", messages: [{ role: "user", content: "fail over" }] } },
      { custom_id: "refused-1", method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4o", messages: [{ role: "user", content: "reach me at jane@example.com" }] } },
      { custom_id: "refused-2", params: { model: "gpt-4o", max_tokens: 64, messages: [{ role: "user", content: "reach me at jane@example.com" }] } }
    ].map((line) => JSON.stringify(line)).join("\n") + "\nthis is not json\n" + JSON.stringify({ custom_id: "chat-1", method: "POST", url: "/v1/chat/completions", body: {} }) + "\n")
    const output = join(dir, "mixed.out.jsonl")
    const run = await runCli(["batch", input, "--out", output, "--config", config("mixed.toml", good.url), "--concurrency", "3"], env)
    expect(run.code).toBe(0)
    const byId = new Map(lines(output).map((line) => [line.custom_id, line]))
    expect([...byId.keys()].sort()).toEqual(["chat-1", "claude-1", "embed-1", "failover-1", "refused-1", "refused-2"])

    const chat = byId.get("chat-1")!
    expect(chat).toMatchObject({ id: expect.stringMatching(/^batch_req_/), error: null, response: { status_code: 200, request_id: expect.any(String) } })
    expect(chat.response.body).toMatchObject({ object: "chat.completion", choices: [{ message: { content: "echo: hello batch" } }] })
    expect(byId.get("embed-1")!.response.body).toMatchObject({ object: "list", data: [{ embedding: expect.any(Array) }] })
    expect(byId.get("claude-1")).toMatchObject({ result: { type: "succeeded", message: { type: "message", content: [{ type: "text", text: "echo: hello from anthropic format" }] } } })
    expect(byId.get("failover-1")!.response).toMatchObject({ status_code: 200, body: { choices: [{ message: { content: "echo: fail over" } }] } })
    expect(byId.get("refused-1")!.response).toMatchObject({ status_code: 400, body: { error: { code: "pii_detected" } } })
    expect(byId.get("refused-2")).toMatchObject({ result: { type: "errored", error: { type: "error", error: { type: "invalid_request_error" } } } })

    expect(run.stderr).toContain("line 7: not JSON")
    expect(run.stderr).toContain("line 8: duplicate custom_id \"chat-1\"")
    expect(run.stderr).toMatch(/4 succeeded, 2 failed, 2 bad input lines/)
    expect(run.stderr).toMatch(/failed by classification: pii_detected 2/)
    expect(down.requests.length).toBeGreaterThan(0) // the failover line tried the flaky provider first
  }, PROCESS_TIMEOUT_MS)

  it("killed in the middle and run again: finishes without redoing completed lines", async () => {
    const count = 400
    const input = write("long.jsonl", Array.from({ length: count }, (_, i) =>
      JSON.stringify({ custom_id: `req-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4o", messages: [{ role: "user", content: `line ${i}` }] } })).join("\n") + "\n")
    const output = join(dir, "long.out.jsonl")
    const cfg = config("long.toml", slow.url)
    slow.reset()
    const first = startCli(["batch", input, "--out", output, "--config", cfg, "--concurrency", "4"], env)
    const deadline = Date.now() + 30_000
    while (!existsSync(output) || readFileSync(output, "utf8").split("\n").length < 60) {
      if (Date.now() > deadline) throw new Error("the first run made no progress")
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    first.child.kill("SIGKILL")
    await first.finished
    const before = readFileSync(output, "utf8")
    const completedBefore = before.split("\n").slice(0, -1).map((line) => JSON.parse(line).custom_id as string)
    expect(completedBefore.length).toBeLessThan(count)

    const second = await runCli(["batch", input, "--out", output, "--config", cfg, "--concurrency", "8"], env)
    expect(second.code).toBe(0)
    const ids = lines(output).map((line) => line.custom_id as string)
    expect(new Set(ids).size).toBe(count)
    expect(ids.length).toBe(count)
    expect(second.stderr).toContain(`${completedBefore.length} already done`)
    // Lines answered before the kill were not asked again.
    const asked = new Map<string, number>()
    for (const request of slow.requests) {
      const content = (request.json as { messages: Array<{ content: string }> }).messages[0].content
      asked.set(content, (asked.get(content) ?? 0) + 1)
    }
    for (const id of completedBefore) expect(asked.get(`line ${id.slice(4)}`)).toBe(1)
  }, PROCESS_TIMEOUT_MS)

  it("Ctrl-C finishes what is in flight and leaves a valid output", async () => {
    const input = write("interrupted.jsonl", Array.from({ length: 300 }, (_, i) =>
      JSON.stringify({ custom_id: `int-${i}`, params: { model: "gpt-4o", max_tokens: 16, messages: [{ role: "user", content: `interrupt ${i}` }] } })).join("\n") + "\n")
    const output = join(dir, "interrupted.out.jsonl")
    const job = startCli(["batch", input, "--out", output, "--config", config("int.toml", slow.url), "--concurrency", "4"], env)
    const deadline = Date.now() + 30_000
    while (!existsSync(output) || readFileSync(output, "utf8").split("\n").length < 20) {
      if (Date.now() > deadline) throw new Error("no progress")
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    job.child.kill("SIGINT")
    const finished = await job.finished
    expect(finished.code).toBe(130)
    expect(finished.stderr).toContain("stopping: finishing the requests in flight")
    expect(finished.stderr).toMatch(/batch stopped/)
    const text = readFileSync(output, "utf8")
    expect(text.endsWith("\n")).toBe(true)
    const done = lines(output)
    expect(done.length).toBeLessThan(300)
    for (const line of done) expect(line.result.type).toBe("succeeded")
  }, PROCESS_TIMEOUT_MS)

  it("usage errors exit 2 with the usage", async () => {
    const run = await runCli(["batch", "--out", join(dir, "x.jsonl")], env)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("missing INPUT")
    expect(run.stderr).toContain("usage: gateway batch")
  }, PROCESS_TIMEOUT_MS)
})
