/**
 * The tenant store's costs, against the Redis at $REDIS_URL (default
 * 127.0.0.1:6379), with sealed snapshots the size of docs/multi-tenant.md's
 * example and a trivial compile function (the pipeline's own compile is
 * measured by the request benchmark):
 *
 * - warm resolve: a cached project, resolved inside one fiber as the request
 *   path does;
 * - cold load: GET + decrypt + validate + compile, one project after another,
 *   and the decrypt + validate part alone;
 * - memory: 10,000 distinct projects cycled through an LRU of 1,000, twice;
 *   the RSS must level off once the LRU is full.
 *
 * Keys live under a prefix unique to the run and are deleted at the end.
 * Run alone with `node --expose-gc bench/tenancy.ts`.
 */
import { Effect, Exit, Scope } from "effect"
import { Redis } from "ioredis"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { generateKeyPair, makeTenantStore, openSnapshot, privateKeyFromBytes, publicKeyFromBytes, seal, tenantId } from "../src/tenancy/index.ts"
import { open } from "../src/tenancy/sealing.ts"
import type { TenantId } from "../src/tenancy/index.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const WARM_RESOLVES = 200_000
const COLD_LOADS = 1_000
const CYCLED_PROJECTS = 10_000
const LRU_CAPACITY = 1_000

export interface TenancyBenchResult {
  readonly warmResolveNs: number
  readonly coldLoadUs: number
  readonly openAndValidateUs: number
  readonly snapshotBytes: number
  readonly decryptUs: number
  /** RSS and live heap in MiB: at start, with the LRU full, after 10,000 projects, after 20,000 loads. */
  readonly memoryMiB: { readonly start: Memory; readonly lruFull: Memory; readonly afterOnePass: Memory; readonly afterTwoPasses: Memory }
  readonly cachedAfterCycling: number
}

const snapshotFor = (version: number) => ({
  version,
  providers: {
    openai: { models: ["gpt-4o", "gpt-4o-mini", "text-embedding-3-small"], credential: { value: `sk-bench-${randomBytes(12).toString("hex")}` } },
    anthropic: { models: ["claude-sonnet-4-5"], credential: { value: `sk-ant-bench-${randomBytes(12).toString("hex")}` } }
  },
  targets: { primary: { model: "gpt-4o" }, backup: { model: "claude-sonnet-4-5" } },
  routes: { assistant: { endpoint: "chat", models: ["assistant"], strategy: "fallback", targets: ["primary", "backup"] } },
  functions: {
    summarize: { endpoint: "chat", strategy: "experiment", variants: { fast: { model: "gpt-4o-mini", weight: 3, temperature: 0.2 }, careful: { target: "backup", weight: 1 } } }
  }
})

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10
/** RSS and live heap after a collection (when run with --expose-gc). */
const memory = () => {
  ;(globalThis as { gc?: () => void }).gc?.()
  const usage = process.memoryUsage()
  return { rss: mib(usage.rss), heap: mib(usage.heapUsed) }
}
type Memory = ReturnType<typeof memory>

const tenantOf = (projectId: string): TenantId => {
  const checked = tenantId(projectId)
  if (checked._tag === "Failure") throw checked.failure
  return checked.success
}

export const runTenancyBench = async (): Promise<TenancyBenchResult> => {
  const prefix = `bench-${randomBytes(4).toString("hex")}`
  const dir = mkdtempSync(join(tmpdir(), "gateway-tenancy-bench-"))
  const keys = generateKeyPair()
  const keyPath = join(dir, "snapshot.key")
  writeFileSync(keyPath, keys.privateKey.toString("base64"), { mode: 0o600 })
  const recipient = publicKeyFromBytes(keys.publicKey)
  const redis = new Redis(REDIS_URL)
  const written: Array<string> = []
  const scope = Effect.runSync(Scope.make())
  try {
    const sealed = JSON.stringify(seal(JSON.stringify(snapshotFor(1)), recipient))
    const projects = Array.from({ length: CYCLED_PROJECTS }, (_, index) => `${prefix}-${index}`)
    for (let start = 0; start < projects.length; start += 500) {
      const batch = redis.pipeline()
      for (const project of projects.slice(start, start + 500)) {
        const key = `gw:routing:${project}:production`
        written.push(key, `gw:routing:${project}:envs`)
        batch.set(key, sealed).sadd(`gw:routing:${project}:envs`, "production")
      }
      await batch.exec()
    }
    const tenants = projects.map(tenantOf)
    const start = memory()

    const store = await Effect.runPromise(makeTenantStore({
      redisUrl: REDIS_URL,
      capacity: LRU_CAPACITY,
      idleTimeoutMs: 3_600_000,
      antiEntropyIntervalMs: 3_600_000,
      privateKeyPath: keyPath,
      log: { log: () => {} }
    }, (_snapshot, identity) => identity).pipe(Scope.provide(scope)))

    // Cold loads, one after another (the LRU holds 1,000, so these fill it).
    const coldStarted = performance.now()
    await Effect.runPromise(Effect.forEach(tenants.slice(0, COLD_LOADS), (tenant) => store.resolve(tenant), { discard: true }))
    const coldLoadUs = ((performance.now() - coldStarted) * 1000) / COLD_LOADS
    const lruFull = memory()

    const privateKey = privateKeyFromBytes(keys.privateKey)
    const openStarted = performance.now()
    for (let index = 0; index < COLD_LOADS; index++) openSnapshot(sealed, privateKey, "bench")
    const openAndValidateUs = ((performance.now() - openStarted) * 1000) / COLD_LOADS
    const envelope = JSON.parse(sealed) as unknown
    const decryptStarted = performance.now()
    for (let index = 0; index < COLD_LOADS; index++) open(envelope, privateKey)
    const decryptUs = ((performance.now() - decryptStarted) * 1000) / COLD_LOADS

    const warm = tenants[COLD_LOADS - 1]
    const warmStarted = performance.now()
    await Effect.runPromise(Effect.gen(function*() {
      for (let index = 0; index < WARM_RESOLVES; index++) yield* store.resolve(warm)
    }))
    const warmResolveNs = ((performance.now() - warmStarted) * 1e6) / WARM_RESOLVES

    await Effect.runPromise(Effect.forEach(tenants, (tenant) => store.resolve(tenant), { discard: true, concurrency: 16 }))
    const afterOnePass = memory()
    await Effect.runPromise(Effect.forEach(tenants, (tenant) => store.resolve(tenant), { discard: true, concurrency: 16 }))
    const afterTwoPasses = memory()
    // Every project of the last LRU_CAPACITY is cached, none before: count what resolves without Redis.
    let cachedAfterCycling = 0
    await redis.del(...written.slice(0, 2 * (CYCLED_PROJECTS - LRU_CAPACITY)))
    for (const tenant of tenants.slice(0, CYCLED_PROJECTS - LRU_CAPACITY)) {
      if (Exit.isSuccess(await Effect.runPromiseExit(store.resolve(tenant)))) cachedAfterCycling++
    }
    for (const tenant of tenants.slice(CYCLED_PROJECTS - LRU_CAPACITY)) {
      if (Exit.isSuccess(await Effect.runPromiseExit(store.resolve(tenant)))) cachedAfterCycling++
    }

    return {
      warmResolveNs: Math.round(warmResolveNs),
      coldLoadUs: Math.round(coldLoadUs),
      openAndValidateUs: Math.round(openAndValidateUs),
      decryptUs: Math.round(decryptUs),
      snapshotBytes: sealed.length,
      memoryMiB: { start, lruFull, afterOnePass, afterTwoPasses },
      cachedAfterCycling
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    for (let start = 0; start < written.length; start += 1000) await redis.del(...written.slice(start, start + 1000))
    redis.disconnect()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const result = await runTenancyBench()
  const shown = (at: Memory) => `RSS ${at.rss} / heap ${at.heap}`
  const { start, lruFull, afterOnePass, afterTwoPasses } = result.memoryMiB
  process.stdout.write(
    `tenant store (sealed snapshot of ${result.snapshotBytes} bytes, LRU ${LRU_CAPACITY}):\n` +
      `  warm resolve                              ${result.warmResolveNs} ns\n` +
      `  cold load (GET+decrypt+validate+compile)  ${result.coldLoadUs} µs\n` +
      `    decrypt+validate                        ${result.openAndValidateUs} µs\n` +
      `    decrypt alone                           ${result.decryptUs} µs\n` +
      `  memory MiB: start ${shown(start)}; LRU full ${shown(lruFull)}; after ${CYCLED_PROJECTS} projects ${shown(afterOnePass)}; ` +
      `after ${2 * CYCLED_PROJECTS} loads ${shown(afterTwoPasses)}\n` +
      `  cached after cycling: ${result.cachedAfterCycling} (the LRU holds ${LRU_CAPACITY})\n`
  )
}
