/**
 * The live tenant store against the real Redis (127.0.0.1:6379): each project
 * answers from its own snapshot, publishes reach a running store through
 * pub/sub or, when the message is lost, through the anti-entropy sweep, the
 * LRU evicts by capacity and idleness, and a cold project is loaded once
 * however many requests wait for it. Project ids are unique to the run; every
 * key written is deleted afterwards.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { eventually, liveStores, redisFixture, sleep, snapshotDocument, uniqueProject, versionOf } from "./support.ts"

const redis = redisFixture()
const stores = liveStores()
const startStore = stores.start
afterEach(async () => {
  await stores.closeAll()
})
afterAll(() => redis.cleanup())

describe("tenant store on Redis", () => {
  it("two projects with different providers each resolve to their own configuration", async () => {
    const alpha = uniqueProject("alpha")
    const beta = uniqueProject("beta")
    await redis.put(alpha, "production", snapshotDocument(1, { baseUrl: "http://127.0.0.1:9001/v1" }))
    await redis.put(beta, "production", snapshotDocument("b-7", { providerId: "groq", baseUrl: "http://127.0.0.1:9002/v1" }))
    const store = await startStore()
    const a = await store.resolve(alpha)
    const b = await store.resolve(beta)
    if (!a.ok || !b.ok) throw new Error("both projects should resolve")
    expect([a.value.identity, a.value.providers, a.value.baseUrls]).toEqual([
      { projectId: alpha, envSlug: "production", version: "1" },
      ["openai"],
      ["http://127.0.0.1:9001/v1"]
    ])
    expect([b.value.identity.version, b.value.providers, b.value.baseUrls]).toEqual(["b-7", ["groq"], ["http://127.0.0.1:9002/v1"]])
    expect(await store.ready()).toBe(true)
  })

  it("environments are separate snapshots of one project", async () => {
    const project = uniqueProject("envs")
    await redis.put(project, "production", snapshotDocument("prod-1"))
    await redis.put(project, "staging", snapshotDocument("stage-1", { baseUrl: "http://127.0.0.1:9003/v1" }))
    const store = await startStore()
    expect(await versionOf(store, project)).toBe("prod-1")
    expect(await versionOf(store, project, "staging")).toBe("stage-1")
  })

  it("a project without snapshots is ROUTING_NOT_CONFIGURED (404); a missing environment of a configured one is ENVIRONMENT_NOT_FOUND (404)", async () => {
    const project = uniqueProject("partial")
    await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore()
    const none = await store.resolve(uniqueProject("nobody"))
    const env = await store.resolve(project, "staging")
    if (none.ok || env.ok) throw new Error("both should fail")
    expect([none.error.code, none.error.status]).toEqual(["ROUTING_NOT_CONFIGURED", 404])
    expect([env.error.code, env.error.status]).toEqual(["ENVIRONMENT_NOT_FOUND", 404])
    expect(env.error.message).toContain(`"staging"`)
  })

  it("a published version reaches a running store through gw:routing:updates", async () => {
    const project = uniqueProject("pubsub")
    await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore()
    expect(await versionOf(store, project)).toBe("1")
    await redis.put(project, "production", snapshotDocument(2, { baseUrl: "http://127.0.0.1:9004/v1" }))
    await redis.announce(project, "production", 2)
    await eventually(async () => (await versionOf(store, project)) === "2", 5_000, "version 2 after the announcement")
    const result = await store.resolve(project)
    expect(result.ok && result.value.baseUrls).toEqual(["http://127.0.0.1:9004/v1"])
    expect(store.compiles(project)).toBe(2)
  })

  it("one publish reaches every replica sharing the Redis", async () => {
    const project = uniqueProject("replicas")
    await redis.put(project, "production", snapshotDocument(1))
    const replicas = [await startStore(), await startStore(), await startStore()]
    for (const replica of replicas) expect(await versionOf(replica, project)).toBe("1")
    await redis.put(project, "production", snapshotDocument(2))
    await redis.announce(project, "production", 2)
    await eventually(async () => (await Promise.all(replicas.map((replica) => versionOf(replica, project)))).every((version) => version === "2"), 5_000, "every replica on version 2")
  })

  it("a publish whose message was lost is caught by the anti-entropy sweep", async () => {
    const project = uniqueProject("sweep")
    await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore({ antiEntropyIntervalMs: 200 })
    expect(await versionOf(store, project)).toBe("1")
    // SET without PUBLISH: only the sweep can notice.
    await redis.put(project, "production", snapshotDocument(2))
    await eventually(async () => (await versionOf(store, project)) === "2", 5_000, "version 2 after a sweep")
  })

  it("an announcement of the version already cached changes nothing", async () => {
    const project = uniqueProject("same")
    await redis.put(project, "production", snapshotDocument(5))
    const store = await startStore()
    await store.resolve(project)
    // The stored value changes but the announced version is the cached one: no reload.
    await redis.put(project, "production", snapshotDocument(6))
    await redis.announce(project, "production", 5)
    await sleep(200)
    expect(await versionOf(store, project)).toBe("5")
  })

  it("a deleted snapshot is dropped by the sweep: the project is then not configured", async () => {
    const project = uniqueProject("deleted")
    await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore({ antiEntropyIntervalMs: 200 })
    expect(await versionOf(store, project)).toBe("1")
    await redis.client.del(`gw:routing:${project}:production`, `gw:routing:${project}:envs`)
    await eventually(async () => (await versionOf(store, project)) === "ROUTING_NOT_CONFIGURED", 5_000, "the deletion to be seen")
  })

  it("the LRU keeps lru_capacity projects and evicts the least recently used", async () => {
    const [a, b, c] = [uniqueProject("lru-a"), uniqueProject("lru-b"), uniqueProject("lru-c")]
    for (const project of [a, b, c]) await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore({ capacity: 2 })
    await store.resolve(a)
    await store.resolve(b)
    await store.resolve(a) // a is now more recent than b
    await store.resolve(c) // evicts b
    await store.resolve(a)
    await store.resolve(b)
    expect([store.compiles(a), store.compiles(b), store.compiles(c)]).toEqual([1, 2, 1])
  })

  it("a project idle longer than lru_idle_timeout_secs is evicted; one in use stays", async () => {
    const [idle, busy] = [uniqueProject("idle"), uniqueProject("busy")]
    for (const project of [idle, busy]) await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore({ idleTimeoutMs: 400 })
    await store.resolve(idle)
    await store.resolve(busy)
    for (let step = 0; step < 8; step++) {
      await sleep(100)
      await store.resolve(busy)
    }
    await store.resolve(idle)
    expect([store.compiles(idle), store.compiles(busy)]).toEqual([2, 1])
  })

  it("concurrent requests for a cold project share one load", async () => {
    const project = uniqueProject("flight")
    await redis.put(project, "production", snapshotDocument(1))
    const store = await startStore()
    const results = await Promise.all(Array.from({ length: 50 }, () => store.resolve(project)))
    expect(results.every((result) => result.ok)).toBe(true)
    expect(store.compiles(project)).toBe(1)
    const values = new Set(results.map((result) => (result.ok ? result.value : undefined)))
    expect(values.size).toBe(1)
  })
})
