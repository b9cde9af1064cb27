/**
 * Multi-tenant mode through the running gateway, against the real Redis:
 * each project answers from its own snapshot (its own providers), a published
 * version is used by the next request, the gateway-side failures of
 * docs/reference/gateway-spec.md §7.4 in the caller's format, disabled endpoints, readiness, and
 * snapshot secrets kept out of the log. Then three gateway processes sharing
 * the Redis: one publish reaches all three.
 */
import OpenAI from "openai"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startCli } from "../cli/process.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { eventually, redisFixture, REDIS_URL, uniqueProject } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const SECRET_A = "sk-tenant-a-secret-never-logged-0123"
const redis = redisFixture()
let alpha: FakeUpstream
let beta: FakeUpstream
let gateway: RunningGateway
const projectA = uniqueProject("alpha")
const projectB = uniqueProject("beta")

/** A snapshot whose `gpt-4o` is served by the provider at `url`. */
const snapshot = (version: number, url: string, extra: Record<string, unknown> = {}) => ({
  version,
  providers: { upstream: { kind: "openai", base_url: `${url}/v1`, models: ["gpt-4o", "text-embedding-3-small"], credential: { value: SECRET_A } } },
  ...extra
})

/** Stores a snapshot and announces it, as `gateway snapshot publish` does. */
const publish = async (projectId: string, envSlug: string, document: Record<string, unknown>) => {
  await redis.put(projectId, envSlug, document)
  await redis.announce(projectId, envSlug, document.version as number)
}

beforeAll(async () => {
  ;[alpha, beta] = await Promise.all([startFakeUpstream({ kind: "openai" }), startFakeUpstream({ kind: "openai" })])
  await publish(projectA, "production", snapshot(1, alpha.url))
  await publish(projectB, "production", snapshot(1, beta.url, { disabled_endpoints: ["embeddings"] }))
  gateway = await startGateway({ tenant_routing: { enabled: true, redis_url: REDIS_URL, anti_entropy_interval_secs: 1 } })
})
afterAll(async () => {
  await gateway.close()
  await Promise.all([alpha.close(), beta.close()])
  await redis.cleanup()
})

const client = (projectId?: string, environment?: string) =>
  new OpenAI({
    baseURL: `${gateway.url}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    // No caller key: the snapshot's own credential is used.
    defaultHeaders: { authorization: null, ...(projectId === undefined ? {} : { "x-gw-project-id": projectId }), ...(environment === undefined ? {} : { "x-gw-environment": environment }) }
  })
const chat = (projectId?: string, environment?: string) =>
  client(projectId, environment).chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "which tenant?" }] }).withResponse()
const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as InstanceType<typeof OpenAI.APIError>)

describe("projects from snapshots", () => {
  it("each project answers from its own configuration (its own provider and credential)", async () => {
    await chat(projectA)
    await chat(projectB)
    expect(alpha.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${SECRET_A}`])
    expect(beta.requests).toHaveLength(1)
  })

  it("a published version is used by the next requests", async () => {
    beta.reset()
    await publish(projectA, "production", snapshot(2, beta.url))
    await eventually(async () => {
      await chat(projectA)
      return beta.requests.length > 0
    }, 5_000, "the new version in use")
  })

  it("a version written without an announcement is caught by the sweep", async () => {
    alpha.reset()
    await redis.put(projectA, "production", snapshot(3, alpha.url))
    await eventually(async () => {
      await chat(projectA)
      return alpha.requests.length > 0
    }, 5_000, "the swept version in use")
  })

  it("the gateway-side failures: no project, no snapshot, no such environment", async () => {
    const none = await failure(chat())
    expect(none?.status).toBe(400)
    expect(none?.message).toContain("x-gw-project-id")
    const unknown = await failure(chat(uniqueProject("nobody")))
    expect(unknown?.status).toBe(404)
    expect((unknown?.error as { code?: string }).code).toBe("ROUTING_NOT_CONFIGURED")
    expect(unknown?.headers?.get("x-gw-error-code")).toBeNull()
    const environment = await failure(chat(projectA, "staging"))
    expect(environment?.status).toBe(404)
    expect((environment?.error as { code?: string }).code).toBe("ENVIRONMENT_NOT_FOUND")
  })

  it("[auth] project_id stands in for an absent or empty x-gw-project-id", async () => {
    const defaulted = await startGateway({
      tenant_routing: { enabled: true, redis_url: REDIS_URL },
      auth: { project_id: projectA }
    })
    try {
      alpha.reset()
      for (const headers of [{}, { "x-gw-project-id": "" }]) {
        const caller = new OpenAI({ baseURL: `${defaulted.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null, ...headers } })
        await caller.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "which tenant?" }] })
      }
      expect(alpha.requests).toHaveLength(2)
    } finally {
      await defaulted.close()
    }
  })

  it("a snapshot that does not open fails closed with SNAPSHOT_DECRYPT_FAILED and no retry headers", async () => {
    const broken = uniqueProject("broken")
    await publish(broken, "production", { version: 1, providers: { p: { kind: "openai", base_url: "not a url", models: ["gpt-4o"] } } })
    const error = await failure(chat(broken))
    expect(error?.status).toBe(503)
    expect((error?.error as { code?: string }).code).toBe("SNAPSHOT_DECRYPT_FAILED")
    expect(error?.headers?.get("retry-after")).toBeNull()
    expect(error?.headers?.get("x-should-retry")).toBeNull()
    redis.forget(broken)
  })

  it("an endpoint the snapshot disables is a 403 feature_disabled", async () => {
    const error = await failure(client(projectB).embeddings.create({ model: "text-embedding-3-small", input: "x" }))
    expect(error?.status).toBe(403)
    expect(error?.headers?.get("x-gw-error-code")).toBe("feature_disabled")
  })

  it("/readyz reports the snapshot store; no snapshot secret reaches the log", async () => {
    const ready = await fetch(`${gateway.url}/readyz`)
    expect(await ready.json()).toMatchObject({ status: "ready", checks: { tenant_redis: "ok" } })
    expect(JSON.stringify(gateway.logs)).not.toContain(SECRET_A)
  })
})

describe("three gateway processes sharing one Redis", () => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-tenants-"))
  const processes: Array<ReturnType<typeof startCli>> = []
  afterAll(async () => {
    for (const running of processes) running.child.kill("SIGTERM")
    await Promise.all(processes.map((running) => running.finished))
    rmSync(dir, { recursive: true, force: true })
  })

  it("one publish reaches all three", async () => {
    const project = uniqueProject("fleet")
    await publish(project, "production", snapshot(1, alpha.url))
    const config = join(dir, "gateway.toml")
    writeFileSync(config, `[server]\nhost = "127.0.0.1"\nport = 0\n\n[telemetry]\nenabled = false\n\n[tenant_routing]\nenabled = true\nredis_url = "${REDIS_URL}"\n`)
    for (let i = 0; i < 3; i++) processes.push(startCli(["serve", "--config", config], { PATH: process.env.PATH ?? "" }))
    const ports = await Promise.all(processes.map(async (running) => {
      await eventually(() => running.stdout().includes("\"port\""), 30_000, "the gateway to start")
      return Number(/"port":(\d+)/.exec(running.stdout())![1])
    }))
    const ask = (port: number) =>
      new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-gw-project-id": project } })
        .chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "fleet" }] }).withResponse()
    // Warm: every process has version 1 cached, answered by alpha.
    for (const port of ports) expect((await ask(port)).response.headers.get("x-gw-upstream-provider")).toBe("upstream")
    beta.reset()
    const published = performance.now()
    await publish(project, "production", snapshot(2, beta.url))
    const reached = await Promise.all(ports.map(async (port) => {
      const before = beta.requests.length
      await eventually(async () => {
        const count = beta.requests.length
        await ask(port)
        return beta.requests.length > count && beta.requests.length > before
      }, 10_000, `the publish to reach the gateway on port ${port}`)
      return performance.now() - published
    }))
    console.log(`publish reached all three processes after ${Math.round(Math.max(...reached))} ms`)
    expect(reached).toHaveLength(3)
    redis.forget(project)
  }, 60_000)
})
