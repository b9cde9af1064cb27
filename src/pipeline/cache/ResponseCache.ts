/**
 * The response cache (`[cache]`): answers kept in Redis, encrypted per
 * credential, looked up before a request goes upstream and stored after its
 * answer went out.
 *
 * Details
 * - Settings come with every call (a project's `[cache]` section): the live
 *   layer keeps `pool_size` connections per distinct `url`, opened on first
 *   use, shared by every project that names that url, closed with the layer.
 * - Failure is a miss: a store that is down, slower than the 50 ms lookup
 *   budget, or answering garbage makes the lookup return nothing, and the
 *   request goes upstream. Commands are never queued while Redis is down
 *   (they fail at once), and failures are logged at most once per 10 seconds
 *   per kind, never per request.
 * - `store` returns at once; the write happens in the background and its
 *   failure is only logged. An encoded entry over `max_entry_size_bytes` is
 *   not written.
 */
import { Context, Effect, Layer } from "effect"
import type { Redacted } from "effect"
import { Redis } from "ioredis"
import { Log } from "../telemetry/log.ts"
import type { JsonLog } from "../telemetry/log.ts"
import { open, seal } from "./crypto.ts"
import { decodeEntry, encodeEntry } from "./entry.ts"
import type { CacheEntry } from "./entry.ts"
import type { CacheSection } from "./policy.ts"

/** Whose cache a call reads or writes: the project's section, and the credential the request runs with. */
export interface CacheScope {
  readonly section: CacheSection
  readonly projectId: string
  readonly credential: Redacted.Redacted<string> | undefined
}

/** The Redis key of an entry: a fixed prefix and the hex key (nothing of the request in clear). */
export const redisKey = (key: string): string => `gw:cache:v1:${key}`

const LOOKUP_BUDGET_MS = 50
const LOG_EVERY_MS = 10_000

/** A URL fit for a log line: its password replaced. */
const shownUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "redacted"
    return parsed.href
  } catch {
    return "<unparsable url>"
  }
}

/** Logs a kind of failure at most once per 10 seconds. */
const throttled = (log: JsonLog) => {
  const last = new Map<string, number>()
  return (kind: string, fields: Record<string, unknown>) => {
    const now = Date.now()
    if (now - (last.get(kind) ?? -Infinity) < LOG_EVERY_MS) return
    last.set(kind, now)
    log.log("warn", "cache unavailable", { kind, ...fields })
  }
}

const sealOptions = (scope: CacheScope) => ({
  encrypt: scope.section.encrypt,
  salt: scope.section.encrypt_salt,
  projectId: scope.projectId,
  credential: scope.credential
})

/**
 * The store's answer, or a failure once the lookup budget is spent: one timer,
 * cleared when the answer comes (cheaper per lookup than racing fibers).
 */
const withinBudget = <A>(read: () => Promise<A>): Effect.Effect<A, Error> =>
  Effect.callback<A, Error>((resume) => {
    let done = false
    const timer = setTimeout(() => {
      done = true
      resume(Effect.fail(new Error("timed out")))
    }, LOOKUP_BUDGET_MS)
    read().then(
      (value) => {
        if (done) return
        clearTimeout(timer)
        resume(Effect.succeed(value))
      },
      (error: unknown) => {
        if (done) return
        clearTimeout(timer)
        resume(Effect.fail(error instanceof Error ? error : new Error(String(error))))
      }
    )
  })

/** What the live and memory layers differ in: reading and writing raw values. */
interface RawStore {
  readonly get: (scope: CacheScope, key: string) => Promise<Uint8Array | null>
  readonly set: (scope: CacheScope, key: string, value: Uint8Array, ttlSeconds: number) => Promise<unknown>
}

const makeCache = (raw: RawStore, report: (kind: string, fields: Record<string, unknown>) => void) =>
  ResponseCache.of({
    lookup: (scope, key) =>
      withinBudget(() => raw.get(scope, key)).pipe(
        Effect.map((stored) => {
          if (stored === null) return undefined
          const plaintext = open(stored, sealOptions(scope))
          const entry = plaintext === undefined ? undefined : decodeEntry(plaintext)
          // Another credential's entry cannot exist under this key; what does not open is damaged or foreign.
          if (entry === undefined) report("unreadable entry", { url: shownUrl(scope.section.url) })
          return entry
        }),
        Effect.catch((error) => {
          report("lookup failed", { url: shownUrl(scope.section.url), reason: error instanceof Error ? error.message : String(error) })
          return Effect.succeed(undefined)
        })
      ),
    store: (scope, key, entry, ttlSeconds) =>
      Effect.sync(() => {
        const value = seal(encodeEntry(entry), sealOptions(scope))
        if (value.byteLength > scope.section.max_entry_size_bytes) return
        raw.set(scope, key, value, ttlSeconds).catch((error: unknown) =>
          report("store failed", { url: shownUrl(scope.section.url), reason: error instanceof Error ? error.message : String(error) })
        )
      })
  })

/** The memory layer's store, open to tests: read what was written, or make the store fail. */
export interface MemoryStore {
  readonly values: Map<string, { readonly value: Uint8Array; readonly expiresAt: number }>
  /** While set, every call fails like a store that is down. */
  down: boolean
}

export class ResponseCache extends Context.Service<ResponseCache, {
  /** The entry stored under `key`, or undefined (none, expired, unreadable, or the store failed). */
  readonly lookup: (scope: CacheScope, key: string) => Effect.Effect<CacheEntry | undefined>
  /** Stores in the background; returns at once and never fails. */
  readonly store: (scope: CacheScope, key: string, entry: CacheEntry, ttlSeconds: number) => Effect.Effect<void>
}>()("gateway/pipeline/cache/ResponseCache") {
  static readonly layer: Layer.Layer<ResponseCache, never, Log> = Layer.effect(
    ResponseCache,
    Effect.gen(function*() {
      const log = yield* Log
      const report = throttled(log)
      const pools = yield* Effect.acquireRelease(
        Effect.sync(() => new Map<string, { readonly clients: Array<Redis>; next: number }>()),
        (pools) =>
          Effect.promise(() =>
            Promise.all([...pools.values()].flatMap((pool) => pool.clients.map((client) => client.quit().catch(() => client.disconnect()))))
          )
      )
      const clientFor = (section: CacheSection): Redis => {
        let pool = pools.get(section.url)
        if (pool === undefined) {
          const clients = Array.from({ length: section.pool_size }, () => {
            const client = new Redis(section.url, {
              // Down means a miss now, not a queue of commands waiting for a reconnect.
              enableOfflineQueue: false,
              // Commands of one event-loop turn share a write: fewer syscalls per lookup under load.
              enableAutoPipelining: true,
              maxRetriesPerRequest: 0,
              connectTimeout: 2_000,
              retryStrategy: (times) => Math.min(times * 200, 2_000)
            })
            client.on("error", (error: Error) => report("connection", { url: shownUrl(section.url), reason: error.message }))
            return client
          })
          pool = { clients, next: 0 }
          pools.set(section.url, pool)
        }
        const client = pool.clients[pool.next]
        pool.next = (pool.next + 1) % pool.clients.length
        return client
      }
      return makeCache({
        get: (scope, key) => clientFor(scope.section).getBuffer(redisKey(key)),
        set: (scope, key, value, ttlSeconds) => clientFor(scope.section).set(redisKey(key), Buffer.from(value), "EX", ttlSeconds)
      }, report)
    })
  )

  /** An in-memory store; `store` lets a test read raw values or take the store down. */
  static readonly layerTest = (store: MemoryStore = { values: new Map(), down: false }): Layer.Layer<ResponseCache, never, Log> =>
    Layer.effect(
      ResponseCache,
      Effect.map(Effect.service(Log), (log) =>
        makeCache({
          get: async (_scope, key) => {
            if (store.down) throw new Error("the store is down")
            const entry = store.values.get(redisKey(key))
            return entry === undefined || entry.expiresAt < Date.now() ? null : entry.value
          },
          set: async (_scope, key, value, ttlSeconds) => {
            if (store.down) throw new Error("the store is down")
            store.values.set(redisKey(key), { value, expiresAt: Date.now() + ttlSeconds * 1000 })
          }
        }, throttled(log))
      )
    )
}
