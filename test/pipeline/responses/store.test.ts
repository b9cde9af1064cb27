/**
 * The live `ResponseStore` against Redis: a stored response reads back for
 * its caller only, what Redis holds is ciphertext under an opaque key, a
 * store that is down fails a read with 503 `INFRA_UNAVAILABLE` while a
 * write's failure is only logged, and the TTL is the section's.
 */
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Redis } from "ioredis"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fingerprinted } from "../../../src/config/index.ts"
import type { ResponsesSection } from "../../../src/config/index.ts"
import { Log } from "../../../src/infra/log.ts"
import { responseRedisKey, ResponseStore, storeKey } from "../../../src/pipeline/responses/index.ts"
import type { ResponseScope, StoredResponse } from "../../../src/pipeline/responses/index.ts"
import { startOwnRedis } from "../../fixtures/own-redis.ts"
import type { OwnRedis } from "../../fixtures/own-redis.ts"

const SALT = "responses-store-test-salt"

const sectionOf = (url: string, fields: Partial<ResponsesSection> = {}): ResponsesSection => ({
  enabled: true,
  url,
  encrypt_salt: SALT,
  store_ttl_seconds: 600,
  max_entry_size_bytes: 64 * 1024,
  pool_size: 2,
  timeout_ms: 300,
  ...fields
})

const scopeOf = (section: ResponsesSection, projectId: string, key: string | undefined): ResponseScope => ({
  section,
  projectId,
  caller: fingerprinted(key === undefined ? undefined : Redacted.make(key)),
  ttlSeconds: section.store_ttl_seconds
})

/** The response a read found for the scope (whether the id is claimed aside). */
const storedOf = (store: ResponseStore["Service"], scope: ResponseScope, id: string) => Effect.map(store.get(scope, id), (read) => read.stored)

const responseOf = (id: string, text: string): StoredResponse => ({
  id,
  createdAt: 1_700_000_000,
  model: "claude-sonnet-4-5",
  status: "completed",
  instructions: "Be brief.",
  context: [],
  input: [{ type: "message", role: "user", content: "What is the capital of France?" }],
  output: [{ type: "message", id: `msg_${id}`, role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] }],
  usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 },
  previousResponseId: null
})

let redis: OwnRedis
let admin: Redis

const build = async () => {
  const logs: Array<Record<string, unknown>> = []
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(ResponseStore.layer.pipe(Layer.provide(Log.layerTest(logs))), scope))
  return { store: Context.get(context, ResponseStore), logs, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** Polls until `check` holds, at most 100 times 20 ms apart. */
const until = async (what: string, check: () => Promise<boolean>) => {
  for (let tries = 0; tries < 100; tries++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`never: ${what}`)
}

beforeAll(async () => {
  redis = await startOwnRedis()
  admin = new Redis(redis.url)
})
afterAll(async () => {
  admin.disconnect()
  await redis.kill()
})

describe("ResponseStore (live)", () => {
  it("reads a stored response back for the caller that stored it; Redis holds ciphertext under an opaque key, with the TTL", async () => {
    const { store, logs, close } = await build()
    const project = `p-${randomUUID()}`
    const scope = scopeOf(sectionOf(redis.url), project, "gw-key-caller-one-0001")
    const id = `resp_${randomUUID().replaceAll("-", "")}`
    await Effect.runPromise(store.put(scope, responseOf(id, "Paris.")))
    const name = responseRedisKey(storeKey(scope, id))
    await until("written", async () => (await admin.exists(name)) === 1)

    expect(await Effect.runPromise(storedOf(store, scope, id))).toEqual(responseOf(id, "Paris."))
    const raw = (await admin.getBuffer(name))!
    for (const clear of ["Paris", "capital", "claude", "Be brief", id, "gw-key-caller-one"]) expect(raw.includes(clear)).toBe(false)
    expect(name).not.toContain(id)
    expect(name).not.toContain(project)
    const ttl = await admin.ttl(name)
    expect(ttl).toBeGreaterThan(590)
    expect(ttl).toBeLessThanOrEqual(600)
    expect(logs).toEqual([])
    await close()
  })

  it("another caller, another project or an unknown id finds nothing; a deleted one is gone", async () => {
    const { store, close } = await build()
    const project = `p-${randomUUID()}`
    const section = sectionOf(redis.url)
    const owner = scopeOf(section, project, "gw-key-owner-0001")
    const id = `resp_${randomUUID().replaceAll("-", "")}`
    await Effect.runPromise(store.put(owner, responseOf(id, "Paris.")))
    await until("written", async () => (await admin.exists(responseRedisKey(storeKey(owner, id)))) === 1)

    expect(await Effect.runPromise(storedOf(store, scopeOf(section, project, "gw-key-other-0002"), id))).toBeUndefined()
    expect(await Effect.runPromise(storedOf(store, scopeOf(section, project, undefined), id))).toBeUndefined()
    expect(await Effect.runPromise(storedOf(store, scopeOf(section, `p-${randomUUID()}`, "gw-key-owner-0001"), id))).toBeUndefined()
    expect(await Effect.runPromise(storedOf(store, owner, "resp_unknown"))).toBeUndefined()
    // Another caller's id is claimed (never forwarded to a provider); an unknown one is not.
    expect(await Effect.runPromise(store.get(scopeOf(section, project, "gw-key-other-0002"), id))).toEqual({ stored: undefined, claimed: true })
    expect(await Effect.runPromise(store.get(owner, "resp_unknown"))).toEqual({ stored: undefined, claimed: false })

    expect(await Effect.runPromise(store.remove(scopeOf(section, project, "gw-key-other-0002"), id))).toBe(false)
    expect(await Effect.runPromise(store.remove(owner, id))).toBe(true)
    expect(await Effect.runPromise(storedOf(store, owner, id))).toBeUndefined()
    await close()
  })

  it("a response over max_entry_size_bytes is kept only as a marker of its size, and the log says so", async () => {
    const { store, logs, close } = await build()
    const scope = scopeOf(sectionOf(redis.url, { max_entry_size_bytes: 512 }), `p-${randomUUID()}`, "gw-key-big-0001")
    const id = `resp_${randomUUID().replaceAll("-", "")}`
    await Effect.runPromise(store.put(scope, responseOf(id, "x".repeat(1000))))
    const marker = await Effect.runPromise(storedOf(store, scope, id))
    expect(marker).toMatchObject({ id, output: [], input: [], context: [] })
    expect(marker?.outgrownBytes).toBeGreaterThan(1000)
    expect(logs).toEqual([expect.objectContaining({ level: "warn", msg: "responses store unavailable", kind: "store skipped" })])
    await close()
  })
})

describe("ResponseStore with Redis stopped", () => {
  it("a read fails with 503 INFRA_UNAVAILABLE; a write only logs its failure; both recover when Redis is back", async () => {
    const own = await startOwnRedis()
    const { store, logs, close } = await build()
    const scope = scopeOf(sectionOf(own.url), `p-${randomUUID()}`, "gw-key-outage-0001")
    const id = `resp_${randomUUID().replaceAll("-", "")}`
    await Effect.runPromise(store.put(scope, responseOf(id, "before")))
    const probe = new Redis(own.url)
    await until("written", async () => (await probe.exists(responseRedisKey(storeKey(scope, id)))) === 1)
    probe.disconnect()

    await own.kill()
    const read = await Effect.runPromise(Effect.flip(store.get(scope, id)))
    expect(read._tag).toBe("InfraError")
    expect(read.code).toBe("INFRA_UNAVAILABLE")
    expect(read.status).toBe(503)
    const removed = await Effect.runPromise(Effect.flip(store.remove(scope, id)))
    expect(removed.code).toBe("INFRA_UNAVAILABLE")
    // A write while the store is down returns at once and does not fail.
    await Effect.runPromise(store.put(scope, responseOf(`${id}x`, "during")))
    await until("the failed write logged", async () => logs.some((line) => line.msg === "responses store unavailable" && line.kind === "store failed"))
    expect(JSON.stringify(logs)).not.toContain("gw-key-outage")

    await own.restart()
    await until("the store answers again", async () => Exit.isSuccess(await Effect.runPromiseExit(store.get(scope, id))))
    await close()
    await own.kill()
  })
})

describe("ResponseStore.layerOff", () => {
  it("is not enabled, stores nothing and finds nothing", async () => {
    const context = await Effect.runPromise(Layer.build(ResponseStore.layerOff).pipe(Effect.scoped))
    const store = Context.get(context, ResponseStore)
    const scope = scopeOf(sectionOf("redis://127.0.0.1:1"), "p", undefined)
    expect(store.enabled).toBe(false)
    await Effect.runPromise(store.put(scope, responseOf("resp_1", "x")))
    expect(await Effect.runPromise(storedOf(store, scope, "resp_1"))).toBeUndefined()
  })
})
