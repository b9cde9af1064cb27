/**
 * A tenant project's own limits (`project_limits` in its snapshot), in
 * multi-tenant mode against the real Redis: counted across every key that
 * calls the project, refused with the same 429 as a key's, and a request the
 * project refuses is taken back out of its key's count.
 */
import OpenAI from "openai"
import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { redisFixture, REDIS_URL, uniqueProject } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const redis = redisFixture()
const limited = uniqueProject("limited")
const free = uniqueProject("free")
const KEY = `gwk-tenant-${limited}`
const KEY_NAME = `caller-${limited}`
const PROJECT_RPM = 3
/** The upstream, the gateway, and a plain Redis client to read the counters. */
let upstream: FakeUpstream, gateway: RunningGateway, counters: Redis

const snapshot = (extra: Record<string, unknown> = {}) => ({
  version: 1,
  providers: { upstream: { kind: "openai", base_url: `${upstream.url}/v1`, models: ["gpt-4o"] } },
  ...extra
})

beforeAll(async () => {
  upstream = await startFakeUpstream({ kind: "openai" })
  counters = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  await redis.put(limited, "production", snapshot({ project_limits: { requests_per_minute: PROJECT_RPM } }))
  await redis.put(free, "production", snapshot())
  gateway = await startGateway({
    tenant_routing: { enabled: true, redis_url: REDIS_URL },
    limits: { url: REDIS_URL },
    keys: { [KEY_NAME]: { key: "env::TENANT_KEY", requests_per_minute: 100 } }
  }, { TENANT_KEY: KEY })
})
afterAll(async () => {
  await gateway.close()
  const keys = [...(await counters.keys(`gw:limits:{project:${limited}}:*`)), ...(await counters.keys(`gw:limits:{key:${KEY_NAME}}:*`))]
  if (keys.length > 0) await counters.del(...keys)
  counters.disconnect()
  await upstream.close()
  await redis.cleanup()
})

const ask = (projectId: string) =>
  new OpenAI({
    baseURL: `${gateway.url}/v1`,
    apiKey: "sk-caller",
    maxRetries: 0,
    defaultHeaders: { "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": projectId }
  }).chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }).then(() => "ok", (error: unknown) => error)

describe("a project's limits from its snapshot", () => {
  it("are counted for the project, refused with a 429 naming it; the refused requests leave the key's count; another project is not limited", async () => {
    const results = []
    for (let i = 0; i < PROJECT_RPM + 2; i++) results.push(await ask(limited))
    expect(results.filter((result) => result === "ok")).toHaveLength(PROJECT_RPM)
    const refused = results.filter((result) => result !== "ok") as Array<InstanceType<typeof OpenAI.RateLimitError>>
    expect(refused).toHaveLength(2)
    for (const error of refused) {
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect(error.message).toContain(`project "${limited}"`)
      expect(error.headers.get("x-ratelimit-limit-requests")).toBe(String(PROJECT_RPM))
    }
    expect(upstream.requests).toHaveLength(PROJECT_RPM)
    // The key admitted five, the project refused two of them: the key's window holds three.
    expect(await counters.zcard(`gw:limits:{key:${KEY_NAME}}:req`)).toBe(PROJECT_RPM)
    for (let i = 0; i < PROJECT_RPM + 2; i++) expect(await ask(free)).toBe("ok")
  })
})
