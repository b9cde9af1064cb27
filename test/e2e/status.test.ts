/**
 * `GET /status` and `/readyz`'s `config_version`: what a platform team reads
 * of a running gateway (providers and credential states, routes, functions,
 * stages, dependencies, tenant snapshots, workers), who may read it (the
 * admin key, else loopback callers only), and that no key ever shows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { statusRefusal } from "../../src/http/status.ts"
import { GatewayConfig } from "../../src/config/index.ts"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import { eventually, redisFixture, REDIS_URL, uniqueProject } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const FOUND_KEY = "sk-status-found-key-0123456789"
const ADMIN_KEY = "admin-status-key-9876543210"

const document = (redisUrl: string) => ({
  providers: {
    openai: { base_url: "http://127.0.0.1:9/v1", models: ["gpt-4o"], credential: "env::FOUND_KEY" },
    anthropic: { base_url: "http://127.0.0.1:9", models: ["claude-x"], credential: "env::NOT_SET_KEY" },
    local: { kind: "openai", base_url: "http://127.0.0.1:9/v1", models: ["llama"], credential: "none" }
  },
  targets: { main: { model: "openai::gpt-4o" }, spare: { model: "local::llama" } },
  routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "fallback", targets: ["main", "spare"] } },
  functions: { summarize: { endpoint: "chat", strategy: "single", models: ["claude-x"] } },
  security: { enabled: true },
  telemetry: { enabled: false },
  cache: { enabled: true, url: redisUrl, encrypt_salt: "status-salt" }
})

const get = async (gateway: RunningGateway, path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}${path}`, { headers })
  const text = await response.text()
  return { status: response.status, text, json: JSON.parse(text) as Record<string, unknown> }
}

describe("GET /status without an admin key", () => {
  let redis: OwnRedis
  let gateway: RunningGateway
  beforeAll(async () => {
    redis = await startOwnRedis()
    gateway = await startGateway(document(redis.url), { FOUND_KEY })
  })
  afterAll(async () => {
    await gateway.close()
    await redis.kill()
  })

  it("answers a loopback caller with what runs, and never a key", async () => {
    const { status, text, json } = await get(gateway, "/status")
    expect(status).toBe(200)
    expect(text).not.toContain(FOUND_KEY)
    const version = json.config_version as { hash: string; loaded_at: string }
    expect(version.hash).toMatch(/^[0-9a-f]{16}$/)
    expect(Math.abs(Date.parse(version.loaded_at) - Date.now())).toBeLessThan(60_000)
    expect(json.workers).toBe(1)
    expect(json.providers).toEqual([
      { id: "openai", kind: "openai", models: ["gpt-4o"], credential: "found" },
      { id: "anthropic", kind: "anthropic", models: ["claude-x"], credential: "missing" },
      { id: "local", kind: "openai", models: ["llama"], credential: "caller" }
    ])
    expect(json.routes).toEqual([{ name: "smart", endpoint: "chat", strategy: "fallback", models: ["smart"] }])
    expect(json.functions).toEqual([{ name: "summarize", endpoint: "chat", strategy: "single" }])
    expect(json.stages).toEqual({
      guardrails: true,
      output_guardrails: false,
      cache: true,
      telemetry: false,
      genai_telemetry: false,
      auth: false,
      tenant_routing: false,
      metrics: true
    })
    expect(json.dependencies).toEqual({ cache_redis: "reachable", collectors: [] })
    expect(json.tenants).toEqual([])
  })

  it("/readyz carries the same config_version", async () => {
    const ready = await get(gateway, "/readyz")
    const status = await get(gateway, "/status")
    expect(ready.json.config_version).toEqual(status.json.config_version)
  })

  it("says when the cache's Redis is gone", async () => {
    await redis.kill()
    try {
      expect((await get(gateway, "/status")).json.dependencies).toEqual({ cache_redis: "unreachable", collectors: [] })
    } finally {
      await redis.restart()
    }
  })
})

describe("GET /status with [server] admin_key", () => {
  let gateway: RunningGateway
  beforeAll(async () => {
    gateway = await startGateway({ ...document("redis://127.0.0.1:9"), cache: { enabled: false }, server: { admin_key: "env::GATEWAY_ADMIN_KEY" } }, {
      FOUND_KEY,
      GATEWAY_ADMIN_KEY: ADMIN_KEY
    })
  })
  afterAll(() => gateway.close())

  it("asks everyone for the key: 401 without, 403 with another, 200 with it in either header", async () => {
    const without = await get(gateway, "/status")
    expect(without.status).toBe(401)
    expect((without.json.error as { message: string }).message).toContain("admin key")
    const wrong = await get(gateway, "/status", { authorization: "Bearer not-the-key" })
    expect(wrong.status).toBe(403)
    expect(wrong.text).not.toContain(ADMIN_KEY)
    expect((await get(gateway, "/status", { authorization: `Bearer ${ADMIN_KEY}` })).status).toBe(200)
    const viaGatewayHeader = await get(gateway, "/status", { "x-gw-authorization": `Bearer ${ADMIN_KEY}` })
    expect(viaGatewayHeader.status).toBe(200)
    expect(viaGatewayHeader.text).not.toContain(ADMIN_KEY)
  })

  it("never logs the key", () => {
    expect(JSON.stringify(gateway.logs)).not.toContain(ADMIN_KEY)
  })
})

describe("who may read /status", () => {
  const settings = (server: Record<string, unknown>, env: Record<string, string> = {}) => GatewayConfig.fromDocument({ server }, env)
  const ctx = (remoteAddress: string, headers: Record<string, string> = {}) =>
    ({ req: { headers, socket: { remoteAddress } } }) as unknown as Parameters<typeof statusRefusal>[0]

  it("without an admin key, loopback callers only", () => {
    expect(statusRefusal(ctx("127.0.0.1"), settings({}))).toBeUndefined()
    expect(statusRefusal(ctx("::1"), settings({}))).toBeUndefined()
    expect(statusRefusal(ctx("::ffff:127.0.0.1"), settings({}))).toBeUndefined()
    expect(statusRefusal(ctx("10.1.2.3"), settings({}))?.status).toBe(403)
    expect(statusRefusal(ctx("::ffff:192.168.0.7"), settings({}))?.status).toBe(403)
  })

  it("with one, a loopback caller needs it too", () => {
    const withKey = settings({ admin_key: "env::ADMIN" }, { ADMIN: ADMIN_KEY })
    expect(statusRefusal(ctx("127.0.0.1"), withKey)?.status).toBe(401)
    expect(statusRefusal(ctx("10.1.2.3", { authorization: `Bearer ${ADMIN_KEY}` }), withKey)).toBeUndefined()
  })

  it("an admin_key that is not env::VAR, or names an unset variable, is a configuration error", () => {
    expect(() => settings({ admin_key: "plain-secret-value" })).toThrow(/server\.admin_key: expected "env::VARIABLE".*not shown/)
    expect(() => settings({ admin_key: "env::NOT_SET_ANYWHERE" })).toThrow(/server\.admin_key: environment variable NOT_SET_ANYWHERE is not set/)
  })
})

describe("GET /status in multi-tenant mode", () => {
  const redis = redisFixture()
  const project = uniqueProject("status")
  let gateway: RunningGateway
  beforeAll(async () => {
    const snapshot = { version: 7, providers: { upstream: { kind: "openai", base_url: "http://127.0.0.1:9/v1", models: ["gpt-4o"] } } }
    await redis.put(project, "production", snapshot)
    await redis.announce(project, "production", 7)
    gateway = await startGateway({ tenant_routing: { enabled: true, redis_url: REDIS_URL }, telemetry: { enabled: false } })
  })
  afterAll(async () => {
    await gateway.close()
    await redis.cleanup()
  })

  it("lists the snapshots loaded, with their versions", async () => {
    expect((await get(gateway, "/status")).json.tenants).toEqual([])
    // A request for the project loads its snapshot (it fails upstream: nothing listens at port 9).
    await fetch(`${gateway.url}/v1/models`, { headers: { "x-gw-project-id": project } })
    await eventually(async () => ((await get(gateway, "/status")).json.tenants as Array<unknown>).length === 1)
    const status = await get(gateway, "/status")
    expect(status.json.tenants).toEqual([{ project_id: project, environment: "production", version: "7" }])
    expect((status.json.dependencies as { tenant_redis: string }).tenant_redis).toBe("reachable")
    expect(status.json.stages).toMatchObject({ tenant_routing: true })
  })
})
