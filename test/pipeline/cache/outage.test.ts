/**
 * The cache's store failing: a redis-server of this test's own is frozen,
 * killed and restarted under a live layer, and the memory layer's store is
 * taken down and slowed. Every lookup still returns (a miss), each kind of
 * failure is logged once rather than per call, hits resume when the store is
 * back, and a frozen store cannot hold the layer's close.
 */
import { connect, createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { Effect, Result } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { MemoryStore } from "../../../src/pipeline/cache/index.ts"
import { withinBudget } from "../../../src/pipeline/cache/ResponseCache.ts"
import { startOwnRedis } from "../../fixtures/own-redis.ts"
import type { OwnRedis } from "../../fixtures/own-redis.ts"
import { buildCache, chatEntry, keyFor, scopeOf, section, uniqueProject, until } from "./support.ts"

let redis: OwnRedis

beforeAll(async () => {
  redis = await startOwnRedis()
})
afterAll(async () => {
  await redis.kill()
})

describe("a live store that goes away", () => {
  it("frozen, killed and restarted: lookups keep returning misses, each failure kind is logged once, hits resume", async () => {
    const cache = await buildCache()
    try {
      const scope = scopeOf(section({ url: redis.url, pool_size: 2 }), uniqueProject("outage"))
      const key = keyFor(scope, "survive the outage")
      const hit = async () => (await cache.lookup(scope, key)) !== undefined
      await cache.store(scope, key, chatEntry("still here"))
      await until("the first hit", hit)

      // Frozen: connections stay open but nothing answers; every lookup gives up at its budget.
      redis.freeze()
      for (let i = 0; i < 10; i++) expect(await cache.lookup(scope, key)).toBeUndefined()
      redis.thaw()
      await until("hits after the thaw", hit)

      // Killed: lookups fail at once (no queue), as misses.
      await redis.kill()
      await until("the pool to see the store down", () => cache.failures("connection").length > 0)
      for (let i = 0; i < 30; i++) expect(await cache.lookup(scope, key)).toBeUndefined()
      for (let i = 0; i < 5; i++) await cache.store(scope, keyFor(scope, `lost write ${i}`), chatEntry("lost"))

      // Restarted (empty: nothing on disk): the pool reconnects by itself and writes land again.
      await redis.restart()
      await until("hits after the restart", async () => {
        await cache.store(scope, key, chatEntry("back again"))
        await new Promise((resolve) => setTimeout(resolve, 50))
        return hit()
      }, 10_000)

      // At most one line per kind per 10 s (usually exactly one: the whole outage is shorter).
      const lines = cache.logs.filter((line) => line.msg === "cache unavailable")
      const span = Date.parse(String(lines.at(-1)!.time)) - Date.parse(String(lines[0].time))
      for (const kind of ["lookup failed", "connection", "store failed"]) {
        expect(cache.failures(kind).length, kind).toBeGreaterThanOrEqual(1)
        expect(cache.failures(kind).length, kind).toBeLessThanOrEqual(1 + Math.floor(span / 10_000))
      }
      expect(cache.failures("unreadable entry")).toEqual([])
    } finally {
      await cache.close()
    }
  }, 30_000)

  it("a frozen store cannot hold the layer's close (shutdown goes on)", async () => {
    const cache = await buildCache()
    const scope = scopeOf(section({ url: redis.url, pool_size: 2 }), uniqueProject("frozen-close"))
    const key = keyFor(scope, "q")
    await cache.store(scope, key, chatEntry("a"))
    await until("a hit", async () => (await cache.lookup(scope, key)) !== undefined)
    redis.freeze()
    try {
      // Pending commands to the frozen store, then the close: it must complete (bounded by the test's timeout).
      expect(await cache.lookup(scope, key)).toBeUndefined()
      await cache.close()
    } finally {
      redis.thaw()
    }
  }, 10_000)
})

describe("the memory layer's store", () => {
  const memory = (): MemoryStore => ({ values: new Map(), down: false })

  it("down or slower than the lookup budget: a miss, logged once; back to normal: a hit", async () => {
    const store = memory()
    const cache = await buildCache(store)
    try {
      const scope = scopeOf(section(), "memory")
      const key = keyFor(scope, "q")
      await cache.store(scope, key, chatEntry("a"))
      await until("the write", () => store.values.size === 1)
      expect(await cache.lookup(scope, key)).toBeDefined()
      expect(await cache.ready(scope.section)).toBe(true)

      store.delayMs = 200
      expect(await cache.lookup(scope, key)).toBeUndefined()
      expect(await cache.lookup(scope, key)).toBeUndefined()
      store.delayMs = undefined
      store.down = true
      expect(await cache.lookup(scope, key)).toBeUndefined()
      expect(await cache.ready(scope.section)).toBe(false)
      store.down = false
      expect(await cache.lookup(scope, key)).toBeDefined()
      expect(cache.failures("lookup failed")).toHaveLength(1)
    } finally {
      await cache.close()
    }
  })

  it("keeps raw values a test can read: sealed, under gw:cache:v1:<key>", async () => {
    const store = memory()
    const cache = await buildCache(store)
    try {
      const scope = scopeOf(section(), "memory")
      const key = keyFor(scope, "a secret question")
      await cache.store(scope, key, chatEntry("a secret answer"))
      await until("the write", () => store.values.size === 1)
      const [[name, { value }]] = [...store.values]
      expect(name).toBe(`gw:cache:v1:${key}`)
      expect(Buffer.from(value).toString("latin1")).not.toContain("secret answer")
    } finally {
      await cache.close()
    }
  })
})

describe("the lookup budget under a busy event loop", () => {
  it("an answer already on the socket when the budget's timer comes due is the answer, not a timeout", async () => {
    // A store on loopback that answers at once, and a read of it: the answer lands in the
    // client's socket while this process is busy past the budget (a GC, another request's work).
    let served = false
    const server = createServer((socket) => socket.on("data", () => {
      socket.write("pong")
      served = true
    }))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const client = connect((server.address() as AddressInfo).port, "127.0.0.1")
    await new Promise((resolve) => client.once("connect", resolve))
    try {
      const read = () => {
        client.write("ping")
        return new Promise<string>((resolve) => client.once("data", (data) => resolve(String(data))))
      }
      const answer = Effect.runPromise(Effect.result(withinBudget(20, read)))
      while (!served) await new Promise((resolve) => setImmediate(resolve))
      const until = Date.now() + 100
      while (Date.now() < until) {
        // busy: the timer of the 20 ms budget comes due with "pong" waiting to be read
      }
      const result = await answer
      expect(Result.isSuccess(result) ? result.success : result.failure.message).toBe("pong")
    } finally {
      client.destroy()
      server.close()
    }
  })
})
