/**
 * The cache's store going away and coming back: with a redis-server this test
 * starts on a port of its own, killed mid-run and restarted, every request
 * keeps succeeding (a store that is down is a miss), the outage is logged
 * once rather than per request, /readyz stays ready, and hits resume once
 * the store is back. A store slower than the 50 ms lookup budget (every
 * client paused with CLIENT PAUSE) is a miss too.
 */
import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

let redis: OwnRedis
let fake: FakeUpstream
let gateway: RunningGateway

beforeAll(async () => {
  redis = await startOwnRedis()
  fake = await startFakeUpstream({ kind: "openai" })
  gateway = await startGateway({
    providers: { openai: { base_url: `${fake.url}/v1`, models: ["gpt-4o"], credential: "none" } },
    cache: { enabled: true, url: redis.url, encrypt_salt: "resilience", default_mode: "always" }
  })
})
afterAll(async () => {
  await gateway.close()
  await fake.close()
  await redis.kill()
})

const ask = async (text: string) => {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: text }] })
  })
  expect(response.status).toBe(200)
  await response.text()
  return response.headers.get("x-gw-cache")
}

/** Asks until the answer is a hit (the background write landed), within a bound. */
const untilHit = async (text: string) => {
  const deadline = Date.now() + 10_000
  while ((await ask(text)) !== "hit") {
    if (Date.now() > deadline) throw new Error("no hit")
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe("a slow store", () => {
  it("a lookup slower than its budget is a miss, and the answer still comes", async () => {
    await ask("slow store")
    await untilHit("slow store")
    const admin = new Redis(redis.url)
    try {
      await admin.call("CLIENT", "PAUSE", "1500", "ALL")
      expect(await ask("slow store")).toBe("miss")
    } finally {
      admin.disconnect()
    }
    await untilHit("slow store")
  }, 20_000)
})

describe("the cache's store down and back", () => {
  it("requests keep succeeding throughout; the outage is logged once; hits resume", async () => {
    await ask("before the outage")
    await untilHit("before the outage")

    await redis.kill()
    for (let i = 0; i < 20; i++) expect(await ask(`during the outage ${i % 3}`)).toBe("miss")
    expect(await ask("before the outage")).toBe("miss")
    const ready = await fetch(`${gateway.url}/readyz`)
    expect(ready.status).toBe(200)
    const outage = gateway.logs.filter((line) => line.msg === "cache unavailable")
    expect(outage.length).toBeGreaterThanOrEqual(1)
    expect(outage.length).toBeLessThanOrEqual(3) // one per kind (connection, lookup, store), not one per request

    await redis.restart()
    await untilHit("after the outage")
  }, 40_000)
})
