/**
 * Every Redis-backed part of the gateway on a Redis Cluster (three masters on
 * loopback, `REDIS_CLUSTER_URL`, started by `npm test`): the cache, the
 * Responses store, limit counters (one script per subject, its keys under one
 * hash tag) in one gateway; tenant snapshots with their announcements
 * (classic pub/sub across the cluster) in another. Then one master is killed
 * mid-run: callers see only what the single-server failure rules give (cache
 * → miss, Responses state → 503, limits → `on_store_error`, a cold tenant →
 * `INFRA_UNAVAILABLE`, a warm one keeps its snapshot), everything on the other
 * masters keeps working (readiness included), and all of it recovers once the
 * master is back.
 */
import { randomUUID } from "node:crypto"
import type { Cluster } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fingerprinted } from "../../src/config/index.ts"
import { claimKey, responseRedisKey, storeKey } from "../../src/pipeline/responses/index.ts"
import type { ResponseScope } from "../../src/pipeline/responses/index.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { clusterAdmin, clusterHealthy, clusterMaster, keysOn, masterOf, REDIS_CLUSTER_URL } from "../fixtures/redis-cluster.ts"
import type { ClusterMaster } from "../fixtures/redis-cluster.ts"
import { Redacted } from "effect"
import { eventually } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const RUN = randomUUID().slice(0, 8)
/** How long recovery may take: the master restarts, the cluster marks it up, clients refresh their slot maps. */
const RECOVERY_MS = 15_000

let admin: Cluster
let upstream: FakeUpstream
/** Cache, Responses store and limits on the cluster. */
let single: RunningGateway
/** Tenant snapshots on the cluster. */
let tenants: RunningGateway
/** The master the test kills: it holds the victim key's counters and the cold tenant's snapshot. */
let victimPort: number
const masters = new Set<number>()
/** The killed master while it is down: a failed test still starts it again (afterAll). */
let down: ClusterMaster | undefined

const CALLER_KEYS = { VICTIM_KEY: `gwk-victim-${RUN}-4c1e8a20`, STEADY_KEY: `gwk-steady-${RUN}-9b3d07f5`, TINY_KEY: `gwk-tiny-${RUN}-61a2c3e4` }
const names = { victim: `victim-${RUN}`, steady: "", tiny: `tiny-${RUN}` }
const projects = { warm: "", cold: "", other: "" }
const limitsKey = (name: string) => `gw:limits:{key:${name}}:req`
const snapshotKey = (project: string) => `gw:routing:${project}:production`

/**
 * A name (bounded tries) whose key lives on (or off) the victim's master. Random
 * names: names differing in one digit alone hash to a few slots (CRC16 is linear).
 */
const pick = async (prefix: string, key: (name: string) => string, onVictim: boolean): Promise<string> => {
  for (let tries = 0; tries < 64; tries++) {
    const name = `${prefix}-${randomUUID().slice(0, 12)}`
    if (((await masterOf(admin, key(name))) === victimPort) === onVictim) return name
  }
  throw new Error(`no ${prefix} name ${onVictim ? "on" : "off"} the victim master`)
}

/** A snapshot whose provider is the fake upstream, sent `credential` (so a test can tell versions apart). */
const publish = async (project: string, version: number) => {
  const snapshot = { version, providers: { upstream: { kind: "openai", base_url: `${upstream.url}/v1`, models: ["gpt-4o"], credential: { value: `sk-${project}-v${version}` } } } }
  await admin.set(snapshotKey(project), JSON.stringify(snapshot), "EX", 600)
  await admin.sadd(`gw:routing:${project}:envs`, "production")
  await admin.expire(`gw:routing:${project}:envs`, 600)
  await admin.publish("gw:routing:updates", JSON.stringify({ projectId: project, envSlug: "production", version: String(version) }))
}

const post = (gateway: RunningGateway, path: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

const keyed = (key: string) => ({ "x-gw-authorization": `Bearer ${key}` })
const chat = (key: string, content: string) =>
  post(single, "/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content }] }, { ...keyed(key), "x-gw-cache": "always" })
const tenantChat = (project: string) => post(tenants, "/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }, { "x-gw-project-id": project })
const respond = (body: Record<string, unknown>) => post(single, "/v1/responses", { model: "gpt-4o", ...body }, keyed(CALLER_KEYS.STEADY_KEY))
const retrieve = (id: string) => fetch(`${single.url}/v1/responses/${id}`, { headers: keyed(CALLER_KEYS.STEADY_KEY) })
const codeOf = async (response: Response) => ((await response.json()) as { error?: { code?: string } }).error?.code

/** The Redis key of a stored response of the steady caller (src/pipeline/responses: project and caller fingerprint). */
const responseKey = (id: string) =>
  responseRedisKey(storeKey({ projectId: "default", caller: fingerprinted(Redacted.make(CALLER_KEYS.STEADY_KEY)) } as ResponseScope, id))

/** Every cache entry name on every master. */
const cacheNames = async () => {
  const all = new Map<string, number>()
  for (const port of masters) for (const name of await keysOn(port, "gw:cache:v1:*")) all.set(name, port)
  return all
}

beforeAll(async () => {
  admin = clusterAdmin()
  upstream = await startFakeUpstream({ kind: "openai" })
  for (const [, , master] of await admin.cluster("SLOTS")) if (master !== undefined) masters.add(master[1])
  victimPort = await masterOf(admin, limitsKey(names.victim))
  names.steady = await pick("steady", (name) => limitsKey(name), false)
  projects.warm = await pick("t-warm", snapshotKey, true)
  projects.cold = await pick("t-cold", snapshotKey, true)
  projects.other = await pick("t-other", snapshotKey, false)
  await Promise.all([publish(projects.warm, 1), publish(projects.cold, 1), publish(projects.other, 1)])
  const key = (variable: string, limits: Record<string, number>) => ({ key: `env::${variable}`, ...limits })
  single = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, models: ["gpt-4o"], credential: "none" } },
    cache: { enabled: true, url: REDIS_CLUSTER_URL, encrypt_salt: "cluster-e2e-salt", ttl_seconds: 600, pool_size: 2 },
    responses: { enabled: true, store_ttl_seconds: 600 },
    limits: { on_store_error: "deny", pool_size: 1 },
    keys: {
      [names.victim]: key("VICTIM_KEY", { requests_per_minute: 1000 }),
      [names.steady]: key("STEADY_KEY", { requests_per_minute: 1000 }),
      [names.tiny]: key("TINY_KEY", { requests_per_minute: 1 })
    }
  }, CALLER_KEYS)
  // Announcements only: the sweep would hide a lost subscription.
  tenants = await startGateway({ tenant_routing: { enabled: true, redis_url: REDIS_CLUSTER_URL, anti_entropy_interval_secs: 3600 } })
}, 30_000)

afterAll(async () => {
  await single?.close()
  await tenants?.close()
  await upstream?.close()
  down?.restart()
  if (admin !== undefined) {
    await eventually(clusterHealthy, RECOVERY_MS, "the cluster healthy again").catch(() => undefined)
    const leftovers = [...Object.values(projects).flatMap((project) => [snapshotKey(project), `gw:routing:${project}:envs`]), ...Object.keys(names).map(limitsKey)]
    await Promise.all(leftovers.map((name) => admin.del(name).catch(() => 0)))
    admin.disconnect()
  }
}, 30_000)

describe("on a Redis Cluster", () => {
  it("the cache, the Responses store (several keys of several slots per request), limits and tenant snapshots with their announcements work", async () => {
    const first = await chat(CALLER_KEYS.STEADY_KEY, `cached-${RUN}`)
    expect(first.status).toBe(200)
    await eventually(async () => (await chat(CALLER_KEYS.STEADY_KEY, `cached-${RUN}`)).headers.get("x-gw-cache") === "hit", 5_000, "a cache hit")

    expect((await chat(CALLER_KEYS.TINY_KEY, "one")).status).toBe(200)
    const refused = await chat(CALLER_KEYS.TINY_KEY, "two")
    expect(refused.status).toBe(429)
    expect(refused.headers.get("x-gw-error-code")).toBe("rate_limit")

    const one = await (await respond({ input: "first turn" })).json() as { id: string; output: Array<{ id: string }> }
    const two = await (await respond({ input: "second turn", previous_response_id: one.id })).json() as { id: string; previous_response_id: string }
    expect(two.previous_response_id).toBe(one.id)
    // The previous response and an item of an earlier one: keys of different slots, read in one request.
    const three = await respond({ previous_response_id: two.id, input: [{ type: "item_reference", id: one.output[0].id }, { role: "user", content: "third" }] })
    expect(three.status).toBe(200)
    expect((await retrieve(one.id)).status).toBe(200)

    upstream.reset()
    expect((await tenantChat(projects.warm)).status).toBe(200)
    expect((await tenantChat(projects.other)).status).toBe(200)
    await publish(projects.other, 2)
    await eventually(async () => {
      await tenantChat(projects.other)
      return upstream.requests.at(-1)?.headers.authorization === `Bearer sk-${projects.other}-v2`
    }, 5_000, "the announced version in use")
  })

  it("one master killed mid-run: only the single-server failure rules show, the other masters serve, and all of it recovers when it is back", async () => {
    // Arrange: a cache entry and a stored response on the victim master and one elsewhere; the warm tenant loaded.
    let onVictim: string | undefined
    let elsewhere: string | undefined
    for (let index = 0; index < 40 && (onVictim === undefined || elsewhere === undefined); index++) {
      const content = `probe-${RUN}-${index}`
      const before = await cacheNames()
      expect((await chat(CALLER_KEYS.STEADY_KEY, content)).status).toBe(200)
      let added: number | undefined
      await eventually(async () => {
        for (const [name, port] of await cacheNames()) if (!before.has(name)) added = port
        return added !== undefined
      }, 5_000, "the entry stored")
      if (added === victimPort) onVictim ??= content
      else elsewhere ??= content
    }
    let storedOnVictim: string | undefined
    let storedElsewhere: string | undefined
    for (let index = 0; index < 40 && (storedOnVictim === undefined || storedElsewhere === undefined); index++) {
      const { id } = await (await respond({ input: `stored-${index}` })).json() as { id: string }
      expect(await admin.exists(responseKey(id))).toBe(1)
      // A read takes the response and its id's claim (another slot): "elsewhere" means both are.
      const masters = [await masterOf(admin, responseKey(id)), await masterOf(admin, responseRedisKey(claimKey(id)))]
      if (masters[0] === victimPort) storedOnVictim ??= id
      else if (masters[1] !== victimPort) storedElsewhere ??= id
    }
    if (onVictim === undefined || elsewhere === undefined || storedOnVictim === undefined || storedElsewhere === undefined) {
      throw new Error("no entries on and off the victim master")
    }
    expect((await tenantChat(projects.warm)).status).toBe(200)

    const master = await clusterMaster(victimPort)
    await master.kill()
    down = master
    upstream.reset()

    // Cache: an entry on the lost master is a miss (the provider answers), one elsewhere a hit.
    const missed = await chat(CALLER_KEYS.STEADY_KEY, onVictim)
    expect(missed.status).toBe(200)
    expect(missed.headers.get("x-gw-cache")).not.toBe("hit")
    expect(upstream.requests).toHaveLength(1)
    expect((await chat(CALLER_KEYS.STEADY_KEY, elsewhere)).headers.get("x-gw-cache")).toBe("hit")
    // Limits: the victim key's counters are on the lost master: on_store_error = "deny" answers 503; the steady key is counted.
    const denied = await chat(CALLER_KEYS.VICTIM_KEY, "limited")
    expect(denied.status).toBe(503)
    expect(await codeOf(denied)).toBe("INFRA_UNAVAILABLE")
    expect((await chat(CALLER_KEYS.STEADY_KEY, `steady-${RUN}`)).status).toBe(200)
    // Responses: state on the lost master is unavailable (503), elsewhere it is read; a new answer is still given.
    const unavailable = await retrieve(storedOnVictim)
    expect(unavailable.status).toBe(503)
    expect(await codeOf(unavailable)).toBe("INFRA_UNAVAILABLE")
    expect((await retrieve(storedElsewhere)).status).toBe(200)
    expect((await respond({ input: "during the outage" })).status).toBe(200)
    // Tenancy: the warm tenant keeps its snapshot; a cold one on the lost master is INFRA_UNAVAILABLE; one elsewhere loads.
    expect((await tenantChat(projects.warm)).status).toBe(200)
    const cold = await tenantChat(projects.cold)
    expect(cold.status).toBe(503)
    expect(await codeOf(cold)).toBe("INFRA_UNAVAILABLE")
    // Readiness holds while the other masters answer (a PING to a random master would flap).
    for (let probe = 0; probe < 12; probe++) expect((await fetch(`${tenants.url}/readyz`)).status).toBe(200)

    master.restart()
    down = undefined
    await eventually(clusterHealthy, RECOVERY_MS, "the cluster healthy again")
    // The master comes back empty (nothing is persisted): what it held is written again.
    await publish(projects.cold, 1)
    await eventually(async () => (await chat(CALLER_KEYS.VICTIM_KEY, "limited")).status === 200, RECOVERY_MS, "the victim key counted again")
    await eventually(async () => (await chat(CALLER_KEYS.STEADY_KEY, onVictim)).headers.get("x-gw-cache") === "hit", RECOVERY_MS, "the victim master caching again")
    await eventually(async () => (await tenantChat(projects.cold)).status === 200, RECOVERY_MS, "the cold tenant loaded")
    const after = await (await respond({ input: "after the outage" })).json() as { id: string }
    await eventually(async () => (await retrieve(after.id)).status === 200, RECOVERY_MS, "the Responses store back")
    // Announcements reach the tenant gateway again (whichever node its subscriber moved to).
    await publish(projects.warm, 2)
    await eventually(async () => {
      await tenantChat(projects.warm)
      return upstream.requests.at(-1)?.headers.authorization === `Bearer sk-${projects.warm}-v2`
    }, RECOVERY_MS, "the announced version in use")
  }, 60_000)
})
