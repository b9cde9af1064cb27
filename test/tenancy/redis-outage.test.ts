/**
 * Redis going away mid-run (a redis-server this test owns, killed with
 * SIGKILL): cached projects keep resolving, a cold project is served by the
 * fallback API (read token minted with the service key, cached), and with
 * the fallback down too the answer is INFRA_UNAVAILABLE with its retry
 * headers. Redis back: loads and updates go through Redis again.
 */
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { renderInfraError } from "../../src/domain/index.ts"
import { makeTenantStore } from "../../src/tenancy/index.ts"
import { startFallbackApi } from "./fake-fallback-api.ts"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import type { Compiled } from "./support.ts"
import { capturedLog, eventually, openStore, recordingCompile, redisFixture, snapshotDocument, versionOf } from "./support.ts"

const SERVICE_KEY = "svc-key-routing-publish-SECRET"

let redis: OwnRedis
beforeAll(async () => {
  redis = await startOwnRedis()
})
afterAll(() => redis.kill())

describe("Redis down", () => {
  it("cached projects keep serving, cold ones come from the fallback API, neither → INFRA_UNAVAILABLE; Redis back → normal", async () => {
    const fallback = await startFallbackApi(SERVICE_KEY)
    const logs = capturedLog()
    const fixture = redisFixture(redis.url)
    await fixture.put("warm", "production", snapshotDocument("warm-1"))
    fallback.put("cold", "production", JSON.stringify(snapshotDocument("cold-from-api")))
    fallback.put("cold2", "production", JSON.stringify(snapshotDocument("cold2-from-api")))
    fallback.put("partial", "production", JSON.stringify(snapshotDocument(1)))
    const store = await openStore(makeTenantStore<Compiled>({
      redisUrl: redis.url,
      capacity: 100,
      idleTimeoutMs: 60_000,
      antiEntropyIntervalMs: 60_000,
      redisCommandTimeoutMs: 200,
      fallback: { baseUrl: fallback.url, authToken: Redacted.make(SERVICE_KEY), timeoutMs: 1_000 },
      log: logs.log
    }, recordingCompile().compile))
    try {
      expect(await versionOf(store, "warm")).toBe("warm-1")
      expect(await store.ready()).toBe(true)
      expect(fallback.calls).toEqual([])

      await redis.kill()
      await eventually(async () => !(await store.ready()), 5_000, "readiness to drop")
      expect(await versionOf(store, "warm")).toBe("warm-1")

      expect(await versionOf(store, "cold")).toBe("cold-from-api")
      expect(await versionOf(store, "cold2")).toBe("cold2-from-api")
      expect(fallback.calls).toEqual([
        { method: "POST", path: "/v1/routing/mint-read-token", bearer: SERVICE_KEY },
        { method: "GET", path: "/internal/routing/snapshots/cold/production", bearer: "read-token-1" },
        { method: "GET", path: "/internal/routing/snapshots/cold2/production", bearer: "read-token-1" }
      ])
      expect(await versionOf(store, "partial", "staging")).toBe("ENVIRONMENT_NOT_FOUND")
      expect(await versionOf(store, "nobody")).toBe("ROUTING_NOT_CONFIGURED")

      await fallback.close()
      const result = await store.resolve("unreached")
      if (result.ok) throw new Error("expected INFRA_UNAVAILABLE")
      expect([result.error.code, result.error.status]).toEqual(["INFRA_UNAVAILABLE", 503])
      expect(renderInfraError(result.error, "openai").headers).toEqual({ "x-should-retry": "true", "retry-after-ms": "500", "retry-after": "1" })
      expect(await versionOf(store, "warm")).toBe("warm-1")

      await redis.restart()
      const back = redisFixture(redis.url)
      await back.put("unreached", "production", snapshotDocument("after-restart"))
      await eventually(async () => (await versionOf(store, "unreached")) === "after-restart", 10_000, "a load through Redis again")
      expect(await store.ready()).toBe(true)
      // The subscriber re-subscribed by itself: an announcement reaches the store again.
      await back.put("warm", "production", snapshotDocument("warm-2"))
      await back.announce("warm", "production", "warm-2")
      await eventually(async () => (await versionOf(store, "warm")) === "warm-2", 10_000, "the update after the restart")
      await back.cleanup()
      expect(logs.text()).not.toContain(SERVICE_KEY)
      expect(logs.text()).not.toContain("read-token-1")
    } finally {
      await store.close()
      await fallback.close()
      fixture.client.disconnect()
    }
  }, 40_000)

  it("the fallback's answers: a revoked read token is minted again once; a fallback that hangs is cut at api_fallback_timeout_ms", async () => {
    const fallback = await startFallbackApi(SERVICE_KEY)
    fallback.put("p1", "production", JSON.stringify(snapshotDocument("one")))
    fallback.put("p2", "production", JSON.stringify(snapshotDocument("two")))
    fallback.put("p3", "production", JSON.stringify(snapshotDocument("three")))
    // No Redis at all on this port: every load goes to the fallback.
    const store = await openStore(makeTenantStore<Compiled>({
      redisUrl: "redis://127.0.0.1:1",
      capacity: 100,
      idleTimeoutMs: 60_000,
      antiEntropyIntervalMs: 60_000,
      fallback: { baseUrl: fallback.url, authToken: Redacted.make(SERVICE_KEY), timeoutMs: 300 },
      log: capturedLog().log
    }, recordingCompile().compile))
    try {
      expect(await versionOf(store, "p1")).toBe("one")
      fallback.setMode("refuse-tokens")
      expect(await versionOf(store, "p2")).toBe("two")
      expect(fallback.minted()).toBe(2)
      fallback.setMode("hang")
      expect(await versionOf(store, "p3")).toBe("INFRA_UNAVAILABLE")
    } finally {
      await store.close()
      await fallback.close()
    }
  })

  it("a wrong service key: the mint is refused and the request gets INFRA_UNAVAILABLE", async () => {
    const fallback = await startFallbackApi(SERVICE_KEY)
    fallback.put("p1", "production", JSON.stringify(snapshotDocument("one")))
    const logs = capturedLog()
    const store = await openStore(makeTenantStore<Compiled>({
      redisUrl: "redis://127.0.0.1:1",
      capacity: 10,
      idleTimeoutMs: 60_000,
      antiEntropyIntervalMs: 60_000,
      fallback: { baseUrl: fallback.url, authToken: Redacted.make("wrong-key-SECRET"), timeoutMs: 1_000 },
      log: logs.log
    }, recordingCompile().compile))
    try {
      expect(await versionOf(store, "p1")).toBe("INFRA_UNAVAILABLE")
      const line = logs.lines.find((entry) => (entry.fields as { source?: string } | undefined)?.source === "fallback api")
      expect((line?.fields as { error: string }).error).toBe("mint-read-token answered 401 (api_fallback_auth_token refused)")
      expect(logs.text()).not.toContain("wrong-key-SECRET")
    } finally {
      await store.close()
      await fallback.close()
    }
  })
})
