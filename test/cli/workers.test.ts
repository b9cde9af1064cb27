/**
 * Workers mode: two gateway processes behind one port serve requests, a killed
 * worker is replaced while the other keeps serving, and SIGTERM drains both
 * (a stream in flight runs to its end) before the primary exits 0.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agent, request } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { parsePrometheus, sampleOf } from "../e2e/prometheus.ts"
import { slowStream, startCli, waitFor } from "./process.ts"

let fake: FakeUpstream
let dir: string

beforeAll(async () => {
  fake = await startFakeUpstream({ kind: "openai" })
  dir = mkdtempSync(join(tmpdir(), "gateway-workers-"))
})
afterAll(async () => {
  await fake.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("workers mode", () => {
  it("serves from every worker, replaces a killed one, and drains all of them on SIGTERM", async () => {
    const path = join(dir, "gateway.toml")
    writeFileSync(path, `[server]\nport = 0\nworkers = 2\nshutdown_grace_secs = 10\n[providers.openai]\nbase_url = "${fake.url}/v1"\nmodels = ["gpt-4o"]\ncredential = "none"\n`)
    const gateway = startCli(["serve", path], {})
    try {
      await waitFor(() => gateway.logLines().filter((line) => line.msg === "listening").length >= 2, "two workers listening")
      const lines = gateway.logLines()
      const port = lines.find((line) => line.msg === "listening")!.port as number
      expect(new Set(lines.filter((line) => line.msg === "listening").map((line) => line.worker))).toEqual(new Set([1, 2]))
      // What is served is said once, by the primary, not once per worker.
      expect(lines.filter((line) => line.msg === "serving").map((line) => line.worker)).toEqual([undefined])

      // New connections are handed to the workers in turn.
      const ask = async () => {
        const agent = new Agent()
        try {
          const response = await request(`http://127.0.0.1:${port}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }),
            dispatcher: agent
          })
          await response.body.dump()
          return response.statusCode
        } finally {
          await agent.close()
        }
      }
      for (let i = 0; i < 6; i++) expect(await ask()).toBe(200)
      await waitFor(() => gateway.logLines().filter((line) => line.msg === "request").length >= 6, "six request lines")
      const served = new Set(gateway.logLines().filter((line) => line.msg === "request").map((line) => line.worker))
      expect(served).toEqual(new Set([1, 2]))

      // Kill worker 1: the other keeps serving, and worker 1 comes back.
      const first = gateway.logLines().find((line) => line.msg === "worker started" && line.worker === 1)!
      process.kill(first.pid as number, "SIGKILL")
      await waitFor(() => gateway.logLines().some((line) => line.msg === "worker died" && line.worker === 1), "the death logged")
      for (let i = 0; i < 3; i++) expect(await ask()).toBe(200)
      await waitFor(() => gateway.logLines().filter((line) => line.msg === "worker started" && line.worker === 1).length === 2, "worker 1 restarted")
      await waitFor(() => gateway.logLines().filter((line) => line.msg === "listening").length >= 3, "the new worker listening")

      // SIGTERM with a stream in flight: it finishes, then everything exits 0.
      const stream = await slowStream(fake, port)
      expect(stream.status).toBe(200)
      const opening = await stream.read()
      gateway.child.kill("SIGTERM")
      const text = opening.text + (await stream.rest())
      expect(text).toContain("part-5")
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
      const finished = await gateway.finished
      expect(finished.code).toBe(0)
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 40_000)

  it("a scrape of /metrics reaching any worker counts the requests of all of them", async () => {
    const path = join(dir, "metrics.toml")
    writeFileSync(path, `[server]\nport = 0\nworkers = 2\n[telemetry]\nenabled = false\n[providers.openai]\nbase_url = "${fake.url}/v1"\nmodels = ["gpt-4o"]\ncredential = "none"\n`)
    const gateway = startCli(["serve", path], {})
    try {
      await waitFor(() => gateway.logLines().filter((line) => line.msg === "listening").length >= 2, "two workers listening")
      const port = gateway.logLines().find((line) => line.msg === "listening")!.port as number
      /** A request on a connection of its own: the primary hands connections to the workers in turn. */
      const once = async (method: "GET" | "POST", path: string, body?: string) => {
        const agent = new Agent()
        try {
          const response = await request(`http://127.0.0.1:${port}${path}`, {
            method,
            headers: { "content-type": "application/json" },
            ...(body === undefined ? {} : { body }),
            dispatcher: agent
          })
          return { status: response.statusCode, text: await response.body.text() }
        } finally {
          await agent.close()
        }
      }
      const chat = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "count me" }] })
      for (let i = 0; i < 6; i++) expect((await once("POST", "/v1/chat/completions", chat)).status).toBe(200)
      await waitFor(() => gateway.logLines().filter((line) => line.msg === "request").length >= 6, "six request lines")
      expect(new Set(gateway.logLines().filter((line) => line.msg === "request").map((line) => line.worker))).toEqual(new Set([1, 2]))
      // Two scrapes, so both workers answer one: each sees all six.
      for (let i = 0; i < 2; i++) {
        const scraped = await once("GET", "/metrics")
        expect(scraped.status).toBe(200)
        const labels = { endpoint: "/v1/chat/completions", provider: "openai", model: "gpt-4o", status: "200" }
        expect(sampleOf(parsePrometheus(scraped.text), "gateway_requests_total", labels)).toBe(6)
      }
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 40_000)
})
