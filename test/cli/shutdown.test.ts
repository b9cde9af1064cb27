/**
 * Graceful shutdown with work in flight: SIGTERM stops new connections but
 * lets a running stream finish, then the gateway exits 0.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { slowStream, startCli } from "./process.ts"

let fake: FakeUpstream
let dir: string

beforeAll(async () => {
  fake = await startFakeUpstream({ kind: "openai" })
  dir = mkdtempSync(join(tmpdir(), "gateway-shutdown-"))
})
afterAll(async () => {
  await fake.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("graceful shutdown", () => {
  it("a stream in flight at SIGTERM runs to its end; new connections are refused; exit 0", async () => {
    const path = join(dir, "gateway.toml")
    writeFileSync(path, `[server]\nport = 0\nshutdown_grace_secs = 10\n[providers.openai]\nbase_url = "${fake.url}/v1"\nmodels = ["gpt-4o"]\ncredential = "none"\n`)
    const gateway = startCli(["serve", path], {})
    try {
      const port = (await gateway.logLine("listening")).port as number
      const stream = await slowStream(fake, port)
      expect(stream.status).toBe(200)
      const first = await stream.read()
      expect(first.done).toBe(false)

      gateway.child.kill("SIGTERM")
      await gateway.logLine("shutting down")
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow()

      const text = first.text + (await stream.rest())
      expect(text).toContain("part-5")
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
      const finished = await gateway.finished
      expect(finished.code).toBe(0)
    } finally {
      gateway.child.kill("SIGKILL")
    }
  })
})

describe("start failures", () => {
  it("a port already in use exits 1 with one clear message", async () => {
    const { createServer } = await import("node:http")
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve()))
    const port = (blocker.address() as { port: number }).port
    const path = join(dir, "busy.toml")
    writeFileSync(path, `[server]\nport = ${port}\n`)
    try {
      const finished = await startCli(["serve", path], {}).finished
      expect(finished.code).toBe(1)
      expect(finished.stderr).toBe(`gateway failed: cannot listen on 127.0.0.1:${port}: the address is already in use (free it, or set [server] port)\n`)
    } finally {
      blocker.close()
    }
  })
})

describe("the cache at start", () => {
  it("an enabled cache with encryption and no salt refuses to start, naming encrypt_salt", async () => {
    const path = join(dir, "cache.toml")
    writeFileSync(path, "[server]\nport = 0\n[cache]\nenabled = true\n")
    const finished = await startCli(["serve", path], {}).finished
    expect(finished.code).toBe(1)
    expect(finished.stderr).toContain("cache.encrypt_salt: must be non-empty when cache.encrypt = true")
  })
})
