/**
 * The Responses store in multi-tenant mode: a project's snapshot sets how long
 * its stored responses live (`responses.store_ttl_seconds`); a project that
 * does not keeps the gateway's. Against the real Redis (REDIS_URL).
 */
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fingerprinted } from "../../src/config/index.ts"
import { responseRedisKey, storeKey } from "../../src/pipeline/index.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { redisFixture, REDIS_URL, uniqueProject } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const redis = redisFixture()
let anthropic: FakeUpstream
let gateway: RunningGateway
const shortLived = uniqueProject("short-ttl")
const inheriting = uniqueProject("gateway-ttl")
const GATEWAY_TTL = 86_400

const snapshot = (extra: Record<string, unknown> = {}) => ({
  version: 1,
  providers: { anthropic: { kind: "anthropic", base_url: anthropic.url, models: ["claude-e2e"], credential: { value: "sk-ant-tenant-ttl-0001" } } },
  ...extra
})

beforeAll(async () => {
  anthropic = await startFakeUpstream({ kind: "anthropic" })
  await redis.put(shortLived, "production", snapshot({ responses: { store_ttl_seconds: 120 } }))
  await redis.put(inheriting, "production", snapshot())
  gateway = await startGateway({
    tenant_routing: { enabled: true, redis_url: REDIS_URL },
    cache: { enabled: false, url: REDIS_URL, encrypt_salt: "responses-tenancy-salt" },
    responses: { enabled: true, store_ttl_seconds: GATEWAY_TTL }
  })
})
afterAll(async () => {
  await gateway.close()
  await anthropic.close()
  await redis.cleanup()
})

/** A caller that sends no key of its own: its responses are the project's. */
const clientOf = (projectId: string) =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null, "x-gw-project-id": projectId } })

/** The TTL Redis holds for a response stored by a keyless caller of the project. */
const ttlOf = async (projectId: string, id: string) => {
  const name = responseRedisKey(storeKey({ projectId, caller: fingerprinted(undefined) }, id))
  const ttl = await redis.client.ttl(name)
  await redis.client.del(name)
  return ttl
}

describe("store_ttl_seconds per project", () => {
  it("a project's snapshot sets its own TTL; another project keeps the gateway's", async () => {
    const short = await clientOf(shortLived).responses.create({ model: "claude-e2e", input: "remember briefly" })
    const ttl = await ttlOf(shortLived, short.id)
    expect(ttl).toBeGreaterThan(100)
    expect(ttl).toBeLessThanOrEqual(120)

    const long = await clientOf(inheriting).responses.create({ model: "claude-e2e", input: "remember long" })
    const inherited = await ttlOf(inheriting, long.id)
    expect(inherited).toBeGreaterThan(GATEWAY_TTL - 60)
    expect(inherited).toBeLessThanOrEqual(GATEWAY_TTL)
  })
})
