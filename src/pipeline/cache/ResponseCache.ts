/**
 * The response cache (`[cache]`): answers kept in Redis, encrypted per
 * credential, looked up before a request goes upstream and stored once the
 * answer is whole (a stream at its last event, a held answer after it went
 * out).
 *
 * Details
 * - Settings come with every call (a project's `[cache]` section): the live
 *   layer keeps `pool_size` connections per distinct `url`, opened on first
 *   use, shared by every project that names that url, closed with the layer.
 * - Failure is a miss: a store that is down, slower than the 50 ms lookup
 *   budget, or answering garbage makes the lookup return nothing, and the
 *   request goes upstream. Commands are never queued while Redis is down
 *   (they fail at once, src/infra/redis-pool.ts), and failures are logged at
 *   most once per 10 seconds per kind and URL, never per request
 *   (`failures.ts`).
 * - `store` returns at once; the write happens in the background and its
 *   failure is only logged. An encoded entry over `max_entry_size_bytes` is
 *   not written, nor is one that would push the bytes waiting for a slow
 *   store past 64 MiB.
 * - `ready` answers whether the store answers a PING within 250 ms, for a
 *   readiness report; the cache itself never needs it.
 */
import { Context, Effect, Layer } from "effect"
import type { FingerprintedCredential } from "../../config/index.ts"
import { Log } from "../../infra/log.ts"
import { open, seal } from "./crypto.ts"
import { decodeEntry, encodeEntry } from "./entry.ts"
import type { CacheEntry } from "./entry.ts"
import { failureReporter, reasonOf } from "./failures.ts"
import { scopedPools } from "./pools.ts"
import type { ReportFailure } from "./failures.ts"
import type { CacheSection } from "./policy.ts"

/** Whose cache a call reads or writes: the project's section, and the credential the request runs with. */
export interface CacheScope {
  readonly section: CacheSection
  readonly projectId: string
  readonly credential: FingerprintedCredential
}

/** The Redis key of an entry: a fixed prefix and the hex key (nothing of the request in clear). */
export const redisKey = (key: string): string => `gw:cache:v1:${key}`

const LOOKUP_BUDGET_MS = 50
const READY_BUDGET_MS = 250
/** Bounds any one command, so a store that never answers cannot keep commands (or shutdown) waiting. */
const COMMAND_TIMEOUT_MS = 1_000
const MAX_PENDING_WRITE_BYTES = 64 * 1024 * 1024

const sealOptions = (scope: CacheScope, key: string) => ({
  encrypt: scope.section.encrypt,
  salt: scope.section.encrypt_salt,
  projectId: scope.projectId,
  credential: scope.credential,
  entryKey: key
})

/**
 * The store's answer, or a failure once the budget is spent: one timer,
 * cleared when the answer comes (cheaper per lookup than racing fibers).
 * The timer's verdict waits for the same turn's I/O (`setImmediate` runs after
 * the poll phase): when the process was busy past the budget (a GC, other
 * requests), an answer already on the socket is read and taken, not counted
 * as a store slower than its budget.
 */
export const withinBudget = <A>(budgetMs: number, read: () => Promise<A>): Effect.Effect<A, Error> =>
  Effect.callback<A, Error>((resume) => {
    let done = false
    // The first outcome wins: the answer, its failure, or the budget spent (the give-up runs a turn after its timer).
    const settle = (outcome: Effect.Effect<A, Error>): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(outcome)
    }
    const timer = setTimeout(() => setImmediate(() => settle(Effect.fail(new Error(`no answer within ${budgetMs} ms`)))), budgetMs)
    read().then(
      (value) => settle(Effect.succeed(value)),
      (error: unknown) => settle(Effect.fail(error instanceof Error ? error : new Error(String(error))))
    )
  })

/** What the live and memory layers differ in: reading and writing raw values under Redis key names. */
interface RawStore {
  readonly get: (section: CacheSection, name: string) => Promise<Uint8Array | null>
  readonly set: (section: CacheSection, name: string, value: Uint8Array, ttlSeconds: number) => Promise<unknown>
  readonly ping: (section: CacheSection) => Promise<unknown>
}

const makeCache = (raw: RawStore, report: ReportFailure) => {
  let pendingWriteBytes = 0
  return ResponseCache.of({
    lookup: (scope, key) =>
      withinBudget(LOOKUP_BUDGET_MS, () => raw.get(scope.section, redisKey(key))).pipe(
        Effect.map((stored) => {
          if (stored === null) return undefined
          const plaintext = open(stored, sealOptions(scope, key))
          const entry = plaintext === undefined ? undefined : decodeEntry(plaintext)
          // Another credential's entry cannot exist under this key; what does not open is damaged or foreign.
          if (entry === undefined) report("unreadable entry", scope.section.url)
          return entry
        }),
        Effect.catch((error) => {
          report("lookup failed", scope.section.url, error.message)
          return Effect.succeed(undefined)
        })
      ),
    store: (scope, key, entry, ttlSeconds) =>
      Effect.sync(() => {
        const { url, max_entry_size_bytes } = scope.section
        let value: Buffer
        try {
          value = seal(encodeEntry(entry), sealOptions(scope, key))
        } catch (error) {
          return report("store failed", url, reasonOf(error))
        }
        if (value.byteLength > max_entry_size_bytes) return
        // A store slower than the traffic must not make answers pile up in memory.
        if (pendingWriteBytes + value.byteLength > MAX_PENDING_WRITE_BYTES) {
          return report("store skipped", url, `more than ${MAX_PENDING_WRITE_BYTES} bytes already wait for the store`)
        }
        const size = value.byteLength
        pendingWriteBytes += size
        raw.set(scope.section, redisKey(key), value, ttlSeconds).then(
          () => {
            pendingWriteBytes -= size
          },
          (error: unknown) => {
            pendingWriteBytes -= size
            report("store failed", url, reasonOf(error))
          }
        )
      }),
    ready: (section) =>
      withinBudget(READY_BUDGET_MS, () => raw.ping(section)).pipe(
        Effect.as(true),
        Effect.orElseSucceed(() => false)
      )
  })
}

/** The memory layer's store, open to tests: read what was written, make the store fail or answer late. */
export interface MemoryStore {
  /** Raw values by Redis key name (`gw:cache:v1:<key>`), as the live store would hold them. */
  readonly values: Map<string, { readonly value: Uint8Array; readonly expiresAt: number }>
  /** While set, every call fails like a store that is down. */
  down: boolean
  /** While set, every answer comes this many milliseconds late (a slow store). */
  delayMs?: number | undefined
}

/** A memory store's answer to a command: late by `delayMs`, a failure while `down`. */
export const memoryAnswer = (store: MemoryStore) => async <A>(value: () => A): Promise<A> => {
  if (store.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, store.delayMs))
  if (store.down) throw new Error("the store is down")
  return value()
}

export class ResponseCache extends Context.Service<ResponseCache, {
  /** The entry stored under `key`, or undefined (none, expired, unreadable, or the store failed or was too slow). */
  readonly lookup: (scope: CacheScope, key: string) => Effect.Effect<CacheEntry | undefined>
  /** Stores in the background; returns at once and never fails. */
  readonly store: (scope: CacheScope, key: string, entry: CacheEntry, ttlSeconds: number) => Effect.Effect<void>
  /** Whether the section's store answers a PING within 250 ms (for a readiness report). */
  readonly ready: (section: CacheSection) => Effect.Effect<boolean>
}>()("gateway/pipeline/cache/ResponseCache") {
  /** Redis pools per url (ioredis is loaded when the layer is built, not before). */
  static readonly layer: Layer.Layer<ResponseCache, never, Log> = Layer.effect(
    ResponseCache,
    Effect.gen(function*() {
      const report = failureReporter(yield* Log)
      // One pool per distinct url, opened on first use, shared by every project naming that url.
      const poolFor = yield* scopedPools<CacheSection>("gateway-cache", () => COMMAND_TIMEOUT_MS, report)
      return makeCache({
        get: (section, name) => poolFor(section).send("get", [name], true) as Promise<Buffer | null>,
        set: (section, name, value, ttlSeconds) =>
          poolFor(section).send("set", [name, Buffer.from(value.buffer, value.byteOffset, value.byteLength), "EX", ttlSeconds]),
        ping: (section) => poolFor(section).ping()
      }, report)
    })
  )

  /**
   * For a gateway where no project can have a cache (`[cache]` off, no tenant
   * snapshots): every lookup misses and nothing is stored or loaded.
   */
  static readonly layerOff: Layer.Layer<ResponseCache> = Layer.succeed(ResponseCache, ResponseCache.of({
    lookup: () => Effect.succeed(undefined),
    store: () => Effect.void,
    ready: () => Effect.succeed(true)
  }))

  /** An in-memory store; `store` lets a test read raw values, take the store down or slow it. */
  static readonly layerTest = (store: MemoryStore = { values: new Map(), down: false }): Layer.Layer<ResponseCache, never, Log> =>
    Layer.effect(
      ResponseCache,
      Effect.map(Effect.service(Log), (log) => {
        const answer = memoryAnswer(store)
        return makeCache({
          get: (_section, name) =>
            answer(() => {
              const entry = store.values.get(name)
              return entry === undefined || entry.expiresAt < Date.now() ? null : entry.value
            }),
          set: (_section, name, value, ttlSeconds) => answer(() => store.values.set(name, { value, expiresAt: Date.now() + ttlSeconds * 1000 })),
          ping: () => answer(() => "PONG")
        }, failureReporter(log))
      })
    )
}
