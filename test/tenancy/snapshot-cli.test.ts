/**
 * `gateway snapshot keygen|seal|publish` as an operator runs them (real
 * processes, `node src/main.ts`), through to a live store on the real Redis:
 * keys written with the right modes, a sealed snapshot that round-trips, an
 * invalid snapshot refused with the messages of `check-config`, and no
 * secret on stdout or stderr.
 */
import { Result } from "effect"
import { Redis } from "ioredis"
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { makeTenantStore, openSnapshot, privateKeyFromBytes } from "../../src/tenancy/index.ts"
import { runCli } from "../cli/process.ts"
import type { Compiled } from "./support.ts"
import { capturedLog, eventually, openStore, recordingCompile, REDIS_URL, redisFixture, uniqueProject } from "./support.ts"

const PROCESS_TIMEOUT_MS = 60_000
const SECRET = "sk-cli-snapshot-SECRET-do-not-print"
const env = { PATH: process.env.PATH ?? "" }
const dir = mkdtempSync(join(tmpdir(), "gateway-snapshot-cli-"))
const redis = redisFixture()
/** Where `publish` says it wrote: the host and port of the Redis these tests use, as a pattern. */
const redisTarget = (() => {
  const url = new URL(REDIS_URL)
  return `${url.hostname}:${url.port === "" ? "6379" : url.port}`.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
})()
afterAll(async () => {
  await redis.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

const write = (name: string, content: string) => {
  const path = join(dir, name)
  writeFileSync(path, content)
  return path
}

const snapshot = (version: number | string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    version,
    providers: { openai: { models: ["gpt-4o"], credential: { value: SECRET } } },
    targets: { primary: { model: "gpt-4o" } },
    routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["primary"] } },
    ...extra
  }, null, 2)

const keyDir = join(dir, "keys")
const privatePath = join(keyDir, "snapshot-x25519.key")
const publicPath = join(keyDir, "snapshot-x25519.pub")

describe("gateway snapshot", () => {
  it("keygen writes a 0600 private key and a public key, base64, and never overwrites them", async () => {
    const first = await runCli(["snapshot", "keygen", "--out", keyDir], env)
    expect(first.code).toBe(0)
    expect(statSync(privatePath).mode & 0o777).toBe(0o600)
    for (const path of [privatePath, publicPath]) expect(Buffer.from(readFileSync(path, "utf8").trim(), "base64")).toHaveLength(32)
    expect(first.stdout).not.toContain(readFileSync(privatePath, "utf8").trim())
    const before = readFileSync(privatePath, "utf8")
    const again = await runCli(["snapshot", "keygen", "--out", keyDir], env)
    expect([again.code, again.stderr]).toEqual([1, `${privatePath} exists; refusing to overwrite a key\n`])
    expect(readFileSync(privatePath, "utf8")).toBe(before)
  }, PROCESS_TIMEOUT_MS)

  it("seal prints an envelope that only the private key opens, to the same snapshot", async () => {
    const path = write("seal.json", snapshot(11))
    const [sealed, inline] = await Promise.all([
      runCli(["snapshot", "seal", "--public-key", publicPath, path], env),
      // The public key may also be given as its base64 text.
      runCli(["snapshot", "seal", "--public-key", readFileSync(publicPath, "utf8").trim(), path], env)
    ])
    expect(sealed.code).toBe(0)
    expect(inline.code).toBe(0)
    expect(sealed.stdout + sealed.stderr).not.toContain(SECRET)
    const envelope = JSON.parse(sealed.stdout) as Record<string, unknown>
    expect(Object.keys(envelope)).toEqual(["v", "alg", "epk", "nonce", "ct"])
    const privateKey = privateKeyFromBytes(Buffer.from(readFileSync(privatePath, "utf8").trim(), "base64"))
    const opened = openSnapshot(sealed.stdout.trim(), privateKey, "test")
    expect(Result.isSuccess(opened) && [opened.success.version, [...opened.success.settings.providers.keys()]]).toEqual(["11", ["openai"]])
  }, PROCESS_TIMEOUT_MS)

  it("an invalid snapshot is refused with the messages check-config gives the same sections, and no secret", async () => {
    const json = write("invalid.json", JSON.stringify({
      version: 1,
      providers: { openai: { models: ["gpt-4o"], credential: { value: SECRET } } },
      routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["nope"] } }
    }))
    const toml = write("invalid.toml", `[server]\n[providers.openai]\nmodels = ["gpt-4o"]\ncredential = "none"\n[routes.smart]\nendpoint = "chat"\nmodels = ["smart"]\nstrategy = "single"\ntargets = ["nope"]\n`)
    const [sealAttempt, checked] = await Promise.all([
      runCli(["snapshot", "seal", "--public-key", publicPath, json], env),
      runCli(["check-config", toml], env)
    ])
    expect(sealAttempt.code).toBe(1)
    expect(sealAttempt.stdout).toBe("")
    expect(sealAttempt.stderr).toBe(`invalid configuration in ${json}: routes.smart.targets[0]: unknown target "nope"\n`)
    expect(sealAttempt.stderr.replace(json, "SOURCE")).toBe(checked.stderr.replace(toml, "SOURCE"))
    expect(sealAttempt.stderr).not.toContain(SECRET)
  }, PROCESS_TIMEOUT_MS)

  it("publish refuses env:: credentials and gateway-only sections, naming each", async () => {
    const path = write("tenant-env.json", JSON.stringify({
      version: 1,
      server: { port: 1 },
      providers: { openai: { models: ["gpt-4o"], credential: "env::OPENAI_API_KEY" } }
    }))
    const project = uniqueProject("refused")
    redis.forget(project)
    const result = await runCli(["snapshot", "publish", "--redis", REDIS_URL, "--project", project, "--env", "production", path], env)
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(
      `invalid configuration in ${path}:\n` +
        `  - server: not allowed in a snapshot; [server] belongs to the gateway's own configuration file\n` +
        `  - providers.openai.credential: env:: locations are refused in a snapshot (a tenant cannot read the gateway host's environment); carry the key as {"value": "<key>"} or write "none"\n`
    )
    expect(await redis.client.exists(`gw:routing:${project}:production`)).toBe(0)
  }, PROCESS_TIMEOUT_MS)

  it("publish seals, stores, records the environment and announces the version; a running store serves it", async () => {
    const project = uniqueProject("published")
    redis.forget(project)
    const store = await openStore(makeTenantStore<Compiled>({
      redisUrl: REDIS_URL,
      capacity: 10,
      idleTimeoutMs: 60_000,
      antiEntropyIntervalMs: 60_000,
      privateKeyPath: privatePath,
      log: capturedLog().log
    }, recordingCompile().compile))
    const listener = new Redis(REDIS_URL)
    const messages: Array<unknown> = []
    await listener.subscribe("gw:routing:updates")
    listener.on("message", (_channel: string, message: string) => {
      const parsed = JSON.parse(message) as { projectId?: string }
      if (parsed.projectId === project) messages.push(parsed)
    })
    try {
      const v1 = await runCli(["snapshot", "publish", "--redis", REDIS_URL, "--project", project, "--env", "production", "--public-key", publicPath, write("v1.json", snapshot(1))], env)
      expect([v1.code, v1.stderr]).toEqual([0, ""])
      expect(v1.stdout).toMatch(new RegExp(`^published gw:routing:${project}:production version 1 \\(sealed\\) to ${redisTarget}; \\d+ subscribers? notified\\n$`))
      const stored = await redis.client.get(`gw:routing:${project}:production`)
      expect(stored).not.toContain(SECRET)
      expect(await redis.client.smembers(`gw:routing:${project}:envs`)).toEqual(["production"])
      const first = await store.resolve(project)
      expect(first.ok && first.value.identity.version).toBe("1")

      const v2 = await runCli(["snapshot", "publish", "--redis", REDIS_URL, "--project", project, "--env", "production", "--public-key", publicPath, write("v2.json", snapshot("2024-06-01.2"))], env)
      expect(v2.code).toBe(0)
      await eventually(async () => {
        const next = await store.resolve(project)
        return next.ok && next.value.identity.version === "2024-06-01.2"
      }, 5_000, "the published version")
      await eventually(() => messages.length === 2, 2_000, "both announcements")
      expect(messages).toEqual([
        { projectId: project, envSlug: "production", version: "1" },
        { projectId: project, envSlug: "production", version: "2024-06-01.2" }
      ])
    } finally {
      listener.disconnect()
      await store.close()
    }
  }, PROCESS_TIMEOUT_MS)

  it("publish without a public key warns that plaintext is for development; a Redis password never appears in its errors", async () => {
    const project = uniqueProject("plain")
    redis.forget(project)
    const path = write("plain.json", snapshot(1))
    redis.forget(project, "dev")
    const [plain, unreachable, badProject] = await Promise.all([
      runCli(["snapshot", "publish", "--redis", REDIS_URL, "--project", project, "--env", "dev", path], env),
      runCli(["snapshot", "publish", "--redis", "redis://:redis-PASSWORD-x@127.0.0.1:1", "--project", project, "--env", "dev", "--public-key", publicPath, path], env),
      runCli(["snapshot", "publish", "--redis", REDIS_URL, "--project", "a:b", "--env", "dev", path], env)
    ])
    expect(plain.code).toBe(0)
    expect(plain.stderr).toBe("warning: publishing a plaintext snapshot (development only); a gateway with tenant_routing.private_key_path refuses it\n")
    expect(unreachable.code).toBe(1)
    expect(unreachable.stderr).toBe("publish to 127.0.0.1:1 failed: connect ECONNREFUSED 127.0.0.1:1\n")
    expect(unreachable.stdout + unreachable.stderr).not.toContain("redis-PASSWORD-x")
    expect([badProject.code, badProject.stderr]).toEqual([1, `--project must be 1 to 128 letters, digits, ".", "_" or "-", starting with a letter or digit\n`])
  }, PROCESS_TIMEOUT_MS)
})
