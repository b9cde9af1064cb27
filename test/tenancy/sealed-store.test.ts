/**
 * Sealed snapshots in the live store (real Redis): with `private_key_path`
 * set only envelopes for that key open; a tampered or wrongly keyed one, or a
 * plaintext one, fails closed with SNAPSHOT_DECRYPT_FAILED until a good
 * version is published. Keys and snapshot secrets never reach a log line.
 */
import { Effect } from "effect"
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { generateKeyPair, makeTenantStore, publicKeyFromBytes, seal } from "../../src/tenancy/index.ts"
import type { TenantStore } from "../../src/tenancy/index.ts"
import type { Compiled, OpenStore } from "./support.ts"
import { capturedLog, eventually, liveStores, REDIS_URL, redisFixture, snapshotDocument, uniqueProject } from "./support.ts"

const SECRET = "sk-tenant-SECRET-never-logged-4242"
const redis = redisFixture()
const dir = mkdtempSync(join(tmpdir(), "gateway-sealed-test-"))
const gatewayKeys = generateKeyPair()
const strangerKeys = generateKeyPair()
const keyPath = join(dir, "gateway.key")
writeFileSync(keyPath, `${gatewayKeys.privateKey.toString("base64")}\n`, { mode: 0o600 })
const gatewayPublic = publicKeyFromBytes(gatewayKeys.publicKey)

const stores = liveStores({ privateKeyPath: keyPath })
const startStore = stores.start
afterEach(async () => {
  await stores.closeAll()
})
afterAll(async () => {
  await redis.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

const sealed = (document: Record<string, unknown>, key = gatewayPublic) => JSON.stringify(seal(JSON.stringify(document), key))

const codeOf = async (store: OpenStore<TenantStore<Compiled>>, project: string) => {
  const result = await store.resolve(project)
  return result.ok ? `version ${result.value.identity.version}` : `${result.error.code} ${result.error.status}`
}

describe("sealed snapshots", () => {
  it("an envelope sealed for the gateway's key opens, and its credential is held redacted", async () => {
    const project = uniqueProject("sealed")
    await redis.put(project, "production", sealed(snapshotDocument(3, { key: SECRET })))
    const store = await startStore()
    const result = await store.resolve(project)
    if (!result.ok) throw new Error(result.error.message)
    const credential = result.value.snapshot.settings.providers.get("openai")!.credential
    expect(credential.location).toEqual({ kind: "inline" })
    expect(String(credential.value)).not.toContain(SECRET)
    expect(JSON.stringify(result.value.snapshot.settings.file)).not.toContain(SECRET)
  })

  it("a tampered envelope, one sealed for another key and a plaintext snapshot all fail closed with SNAPSHOT_DECRYPT_FAILED (503)", async () => {
    const [tampered, stranger, plaintext] = [uniqueProject("tampered"), uniqueProject("stranger"), uniqueProject("plain")]
    const envelope = seal(JSON.stringify(snapshotDocument(1)), gatewayPublic)
    const ct = Buffer.from(envelope.ct, "base64")
    ct[3] ^= 0x01
    await redis.put(tampered, "production", JSON.stringify({ ...envelope, ct: ct.toString("base64") }))
    await redis.put(stranger, "production", sealed(snapshotDocument(1), publicKeyFromBytes(strangerKeys.publicKey)))
    await redis.put(plaintext, "production", snapshotDocument(1))
    const store = await startStore()
    for (const project of [tampered, stranger, plaintext]) {
      expect(await codeOf(store, project)).toBe("SNAPSHOT_DECRYPT_FAILED 503")
      // Still closed on the next request, without a new read per request.
      expect(await codeOf(store, project)).toBe("SNAPSHOT_DECRYPT_FAILED 503")
    }
    const reasons = store.logs.lines.filter((line) => line.msg === "tenant snapshot refused").map((line) => (line.fields as { reason: string }).reason)
    expect(reasons).toEqual([
      "cannot decrypt: authentication failed (tampered, or sealed for another key)",
      "cannot decrypt: authentication failed (tampered, or sealed for another key)",
      "plaintext snapshot refused: tenant_routing.private_key_path is set, so snapshots must be sealed"
    ])
    expect(store.compiles(tampered) + store.compiles(stranger) + store.compiles(plaintext)).toBe(0)
  })

  it("a failed snapshot stays closed until a new version is published, then serves it", async () => {
    const project = uniqueProject("recover")
    await redis.put(project, "production", sealed(snapshotDocument(1), publicKeyFromBytes(strangerKeys.publicKey)))
    const store = await startStore()
    expect(await codeOf(store, project)).toBe("SNAPSHOT_DECRYPT_FAILED 503")
    await redis.put(project, "production", sealed(snapshotDocument(2)))
    await redis.announce(project, "production", 2)
    await eventually(async () => (await codeOf(store, project)) === "version 2", 5_000, "the republished version")
  })

  it("a new version that does not open replaces a good one: the project fails closed rather than keep a configuration its operator replaced", async () => {
    const project = uniqueProject("revoke")
    await redis.put(project, "production", sealed(snapshotDocument(1)))
    const store = await startStore()
    expect(await codeOf(store, project)).toBe("version 1")
    await redis.put(project, "production", sealed(snapshotDocument(2), publicKeyFromBytes(strangerKeys.publicKey)))
    await redis.announce(project, "production", 2)
    await eventually(async () => (await codeOf(store, project)) === "SNAPSHOT_DECRYPT_FAILED 503", 5_000, "the refusal")
  })

  it("a re-sealed snapshot of the same version is not compiled again", async () => {
    const project = uniqueProject("reseal")
    await redis.put(project, "production", sealed(snapshotDocument(4)))
    const store = await startStore({ antiEntropyIntervalMs: 150 })
    expect(await codeOf(store, project)).toBe("version 4")
    await redis.put(project, "production", sealed(snapshotDocument(4)))
    await redis.put(project, "production", sealed(snapshotDocument(5)))
    await eventually(async () => (await codeOf(store, project)) === "version 5", 5_000, "version 5")
    expect(store.compiles(project)).toBe(2)
  })

  it("no snapshot secret reaches the log: not a credential, not a refused snapshot's text, not the Redis password", async () => {
    const [good, invalid, broken] = [uniqueProject("log-good"), uniqueProject("log-invalid"), uniqueProject("log-broken")]
    await redis.put(good, "production", sealed(snapshotDocument(1, { key: SECRET })))
    // Valid JSON, invalid snapshot: the secret sits next to the problem.
    await redis.put(invalid, "production", sealed({ ...snapshotDocument(1, { key: SECRET }), routes: { r: { endpoint: "chat", models: ["m"], strategy: "single", targets: [SECRET] } } }))
    // Not JSON after decryption, the secret right at the error.
    await redis.put(broken, "production", JSON.stringify(seal(`{"version":1,"providers":{"openai":{"credential":{"value":"${SECRET}"}}}`.slice(0, -2) + "!!", gatewayPublic)))
    const store = await startStore()
    expect(await codeOf(store, good)).toBe("version 1")
    expect(await codeOf(store, invalid)).toBe("SNAPSHOT_DECRYPT_FAILED 503")
    expect(await codeOf(store, broken)).toBe("SNAPSHOT_DECRYPT_FAILED 503")
    const reasons = store.logs.lines.filter((line) => line.msg === "tenant snapshot refused").map((line) => (line.fields as { reason: string }).reason)
    expect(reasons).toEqual([
      "does not validate (problems at routes.r.targets[0]); `gateway snapshot seal` on its plaintext shows the messages",
      "decrypted payload is not valid JSON (at position 95 (line 1 column 96))"
    ])
    expect(store.logs.text()).not.toContain(SECRET)
    expect(store.logs.text()).not.toContain(gatewayKeys.privateKey.toString("base64"))

    const password = "redis-PASSWORD-never-logged"
    const unreachable = await startStore({ redisUrl: `redis://:${password}@127.0.0.1:1` })
    const down = unreachable.logs
    const result = await unreachable.resolve(good)
    expect(result.ok ? "ok" : result.error.code).toBe("INFRA_UNAVAILABLE")
    expect(down.lines.some((line) => line.msg.includes("redis"))).toBe(true)
    expect(down.text()).not.toContain(password)
  })

  it("a private key file readable by others is used with a startup warning; an unreadable or malformed one stops startup", async () => {
    const loose = join(dir, "loose.key")
    writeFileSync(loose, gatewayKeys.privateKey)
    chmodSync(loose, 0o644)
    const store = await startStore({ privateKeyPath: loose })
    expect(store.logs.lines.find((line) => line.msg === "tenant private key warning")?.fields).toEqual({
      warning: `tenant_routing.private_key_path: ${loose} is accessible by group or others (mode 644); chmod 600 it`
    })
    const malformed = join(dir, "short.key")
    writeFileSync(malformed, "c2hvcnQ=\n", { mode: 0o600 })
    for (const [path, message] of [
      [join(dir, "absent.key"), `tenant_routing.private_key_path: cannot read ${join(dir, "absent.key")} (ENOENT)`],
      [malformed, `tenant_routing.private_key_path: ${malformed} does not hold a 32-byte X25519 key (raw or base64)`]
    ]) {
      const exit = await Effect.runPromise(Effect.exit(Effect.scoped(makeTenantStore({
        redisUrl: REDIS_URL,
        capacity: 1,
        idleTimeoutMs: 1000,
        antiEntropyIntervalMs: 1000,
        privateKeyPath: path,
        log: capturedLog().log
      }, () => 0))))
      expect(exit._tag === "Failure" && String(exit.cause)).toContain(message)
    }
  })
})
