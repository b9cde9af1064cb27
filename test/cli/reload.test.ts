/**
 * Reloading the configuration of a running gateway (`npm start`'s process,
 * and workers mode): SIGHUP, or a change to the file with `[server]
 * watch_config`, re-reads it. A valid file routes the next request anew while
 * a stream opened before keeps its target, and pooled connections to an
 * unchanged provider are kept; an invalid one is refused with check-config's
 * message and the old configuration keeps serving; a setting only a restart
 * applies is named. SIGHUP never stops the gateway.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agent, request } from "undici"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { runCli, slowStream, startCli, waitFor } from "./process.ts"

let first: FakeUpstream
let second: FakeUpstream
let dir: string

beforeAll(async () => {
  first = await startFakeUpstream({ kind: "openai" })
  second = await startFakeUpstream({ kind: "openai" })
  dir = mkdtempSync(join(tmpdir(), "gateway-reload-"))
})
afterAll(async () => {
  await first.close()
  await second.close()
  rmSync(dir, { recursive: true, force: true })
})
beforeEach(() => {
  first.reset()
  second.reset()
})

/** A file with `server` settings (besides port 0 unless they set it) whose route `smart` goes to `target`: `a` on the first provider, `b` on the second. */
const file = (server: string, target: "a" | "b") => `[server]
${server.includes("port =") ? "" : "port = 0"}
shutdown_grace_secs = 10
${server}
[providers.first]
kind = "openai"
base_url = "${first.url}/v1"
models = ["gpt-4o"]
credential = "none"
[providers.second]
kind = "openai"
base_url = "${second.url}/v1"
models = ["gpt-4o-mini"]
credential = "none"
[targets.a]
model = "first::gpt-4o"
[targets.b]
model = "second::gpt-4o-mini"
[routes.smart]
endpoint = "chat"
models = ["smart"]
strategy = "single"
targets = ["${target}"]
`
/** A file that does not validate: the route names a target nobody defined. */
const INVALID = (server: string) => file(server, "a").replace(`targets = ["a"]`, `targets = ["nowhere"]`)

/** A chat request to `smart` on a connection of its own (workers take connections in turn): the provider that answered. */
const ask = async (port: number, model = "smart") => {
  const agent = new Agent()
  try {
    const response = await request(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
      dispatcher: agent
    })
    await response.body.dump()
    expect(response.statusCode).toBe(200)
    return response.headers["x-gw-upstream-provider"]
  } finally {
    await agent.close()
  }
}

type Cli = ReturnType<typeof startCli>
const linesOf = (gateway: Cli, msg: string) => gateway.logLines().filter((line) => line.msg === msg)

describe("reloading the configuration", () => {
  it("SIGHUP: a good file routes the next request anew while an open stream keeps its target; a bad one is refused and the old one serves", async () => {
    const path = join(dir, "sighup.toml")
    writeFileSync(path, file("", "a"))
    const gateway = startCli(["serve", path], {})
    try {
      const port = (await gateway.logLine("listening")).port as number
      expect(await ask(port)).toBe("first")
      const stream = await slowStream(first, port, "smart")
      expect(stream.status).toBe(200)
      const opening = await stream.read()

      writeFileSync(path, file("port = 4999", "b"))
      gateway.child.kill("SIGHUP")
      await waitFor(() => linesOf(gateway, "config reloaded").length === 1, "the reload")
      const reloaded = linesOf(gateway, "config reloaded")[0]
      // The port only a restart applies is named, and kept: the gateway still answers where it listened.
      expect(reloaded.restart_needed).toEqual(["server.port"])
      expect(await ask(port)).toBe("second")
      // The stream opened before the reload ran to its end on its own target.
      const text = opening.text + (await stream.rest())
      expect(text).toContain("part-5")
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
      expect(first.requests.filter((r) => (r.json as { stream?: boolean }).stream === true).length).toBe(1)

      // Connections to a provider the reload did not change are kept: a pooled socket from before.
      const before = new Set(first.requests.map((r) => r.remotePort))
      expect(await ask(port, "gpt-4o")).toBe("first")
      expect(before).toContain(first.requests.at(-1)!.remotePort)

      // A bad file: refused with check-config's own message, and `smart` still goes to `second`.
      writeFileSync(path, INVALID("port = 4999"))
      const checked = await runCli(["check-config", path], {})
      expect(checked.code).toBe(1)
      gateway.child.kill("SIGHUP")
      await waitFor(() => linesOf(gateway, "config reload refused").length === 1, "the refusal")
      expect(linesOf(gateway, "config reload refused")[0].error).toBe(checked.stderr.trimEnd())
      expect(await ask(port)).toBe("second")
      expect(gateway.child.exitCode).toBe(null)
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 40_000)

  it("[server] watch_config: a file written in place is reloaded", async () => {
    const path = join(dir, "watched.toml")
    writeFileSync(path, file("watch_config = true", "a"))
    const gateway = startCli(["serve", path], {})
    try {
      const port = (await gateway.logLine("listening")).port as number
      expect(await ask(port)).toBe("first")
      writeFileSync(path, file("watch_config = true", "b"))
      await waitFor(() => linesOf(gateway, "config reloaded").length >= 1, "the reload")
      expect(await ask(port)).toBe("second")
      writeFileSync(path, INVALID("watch_config = true"))
      await waitFor(() => linesOf(gateway, "config reload refused").length >= 1, "the refusal")
      expect(await ask(port)).toBe("second")
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 40_000)

  it("workers: SIGHUP to the primary reloads every worker; a stream keeps its target; a bad file is refused by each", async () => {
    const path = join(dir, "workers.toml")
    writeFileSync(path, file("workers = 2", "a"))
    const gateway = startCli(["serve", path], {})
    try {
      await waitFor(() => linesOf(gateway, "listening").length >= 2, "two workers listening")
      const port = linesOf(gateway, "listening")[0].port as number
      const stream = await slowStream(first, port, "smart")
      const opening = await stream.read()

      writeFileSync(path, file("workers = 3", "b"))
      gateway.child.kill("SIGHUP")
      await waitFor(() => linesOf(gateway, "config reloaded").length === 2, "both workers reloaded")
      const reloaded = linesOf(gateway, "config reloaded")
      expect(new Set(reloaded.map((line) => line.worker))).toEqual(new Set([1, 2]))
      expect(reloaded.map((line) => line.restart_needed)).toEqual([["server.workers"], ["server.workers"]])
      // Connections go to the workers in turn: every one of them routes anew.
      for (let i = 0; i < 4; i++) expect(await ask(port)).toBe("second")
      const served = new Set(linesOf(gateway, "request").filter((line) => line.provider === "second").map((line) => line.worker))
      expect(served).toEqual(new Set([1, 2]))

      const text = opening.text + (await stream.rest())
      expect(text).toContain("part-5")

      writeFileSync(path, INVALID("workers = 2"))
      gateway.child.kill("SIGHUP")
      await waitFor(() => linesOf(gateway, "config reload refused").length === 2, "both workers refused")
      for (let i = 0; i < 2; i++) expect(await ask(port)).toBe("second")
      expect(linesOf(gateway, "worker died")).toEqual([])
    } finally {
      gateway.child.kill("SIGKILL")
    }
  }, 40_000)
})
