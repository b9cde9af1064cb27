/**
 * The Responses API's state (`[responses]`): every stored response under its
 * id, in Redis, encrypted per caller and project, read by
 * `previous_response_id`, `item_reference` and `/v1/responses/{id}`.
 *
 * Details
 * - Whose: a scope is the project and the caller's identity (its gateway or
 *   platform key, else its own provider key, else none: the project alone),
 *   never the provider credential the gateway adds, so a conversation can
 *   move between providers. The Redis key is a SHA-256 of project, the
 *   identity's fingerprint and the id: another caller's id names no entry
 *   of this caller (unknown, as an expired one is). The value is sealed with
 *   the cache's key derivation (src/pipeline/cache/crypto.ts), its Redis key
 *   bound in, so a copy of the store reveals nothing.
 * - `put` waits for its one round trip (so the caller's next turn finds
 *   the response) but never fails: a write's failure is only logged
 *   (`responses store unavailable`, at most one line per 10 s per kind, as
 *   the cache does). An entry larger than `max_entry_size_bytes` is not
 *   written (logged): a small marker saying so is, so chaining from it is a
 *   clear 400.
 * - `get`, `state` and `remove` need the store: one that is down or slower than
 *   `timeout_ms` fails them with 503 `INFRA_UNAVAILABLE` (the request cannot
 *   be answered correctly without its state).
 * - On a Redis Cluster the entries of one request (a response and its items)
 *   live on different slots: they are read and written one key per command
 *   (no MGET, no MULTI), so a write may be partly stored when a master fails
 *   during it; a read then finds the response without some item (a 400 for
 *   that `item_reference`, as for an expired one).
 * - `layerOff` (no `[responses]` store): `enabled` is false, nothing is
 *   stored, and nothing (ioredis included) is loaded.
 */
import { Context, Effect, Layer, Result } from "effect"
import { hash } from "node:crypto"
import type { FingerprintedCredential, ResponsesSection } from "../../config/index.ts"
import { InfraError } from "../../domain/index.ts"
import { Log } from "../../infra/log.ts"
import { failureReporter, memoryAnswer, open, reasonOf, scopedPools, seal, withinBudget } from "../cache/index.ts"
import type { MemoryStore, ReportFailure } from "../cache/index.ts"
import { decodeStored, encodeStored } from "./entry.ts"
import type { StoredItem, StoredResponse } from "./entry.ts"
import type { StateNeeds, StoredState } from "./resolve.ts"

/** Whose responses a call reads or writes. */
export interface ResponseScope {
  readonly section: ResponsesSection
  readonly projectId: string
  /** The caller's own identity (gateway, platform or provider key it sent), never the gateway's provider credential. */
  readonly caller: FingerprintedCredential
  /** How long what is written lives: the project's `store_ttl_seconds` (its snapshot's in multi-tenant mode, else the gateway's). */
  readonly ttlSeconds: number
}

/** The hex key an id is stored under for a scope: nothing of the id, caller or project in clear. */
export const storeKey = (scope: Pick<ResponseScope, "projectId" | "caller">, id: string): string =>
  hash("sha256", `gateway-responses/v1\n${scope.projectId}\n${scope.caller.fingerprint ?? "none"}\n${id}`, "hex")

/** The Redis key of an entry. */
export const responseRedisKey = (key: string): string => `gw:responses:v1:${key}`

/**
 * The hex key of an id's claim: whoever stored it, the store kept a response
 * or item of that id. An id the store does not know for this caller but that
 * is claimed is another caller's (unknown to this one: never forwarded to a
 * native provider, which the gateway's credential could make it answer).
 */
export const claimKey = (id: string): string => hash("sha256", `gateway-responses-claim/v1\n${id}`, "hex")

const CLAIMED = Buffer.from("1")

const RETRY_AFTER_MS = 1_000

const reporterOf = (log: Log["Service"]): ReportFailure => failureReporter(log, Date.now, "responses store unavailable")

const unavailable = (why: string) =>
  new InfraError({ code: "INFRA_UNAVAILABLE", message: `the Responses store is unavailable (${why}); retry shortly`, retryAfterMs: RETRY_AFTER_MS })

const sealOptions = (scope: ResponseScope, key: string) => ({
  encrypt: true,
  salt: scope.section.encrypt_salt,
  projectId: scope.projectId,
  credential: scope.caller,
  entryKey: `responses:${key}`
})

/** What the live and memory layers differ in: raw values under Redis key names. */
interface RawStore {
  readonly mget: (section: ResponsesSection, names: ReadonlyArray<string>) => Promise<ReadonlyArray<Uint8Array | null>>
  /** Every value with the TTL, in one round trip. */
  readonly setMany: (section: ResponsesSection, values: ReadonlyArray<readonly [string, Uint8Array]>, ttlSeconds: number) => Promise<unknown>
  readonly del: (section: ResponsesSection, name: string) => Promise<number>
}

const needing = <A>(section: ResponsesSection, read: () => Promise<A>, report: ReportFailure): Effect.Effect<A, InfraError> =>
  withinBudget(section.timeout_ms, read).pipe(
    Effect.mapError((error) => {
      report("lookup failed", section.url, error.message)
      return unavailable(error.message.includes("within") ? "no answer in time" : "not reachable")
    })
  )

/** The store key of an item (an output item kept on its own, for `item_reference`). */
const itemKey = (scope: ResponseScope, id: string): string => storeKey(scope, `item:${id}`)

/** The bytes as a `Buffer` (what ioredis writes as they are): a sealed value already is one. */
const toBuffer = (value: Uint8Array): Buffer => Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)

const makeStore = (raw: RawStore, report: ReportFailure) => {
  // Writes still on their way, by Redis key: a read of one waits for it, so a
  // caller's next turn finds a streamed answer stored as its body ended.
  const pending = new Map<string, Promise<boolean>>()
  const mget = (section: ResponsesSection, names: ReadonlyArray<string>) => {
    const waits = names.flatMap((name) => pending.get(name) ?? [])
    return waits.length === 0 ? raw.mget(section, names) : Promise.all(waits).then(() => raw.mget(section, names))
  }
  const write = (scope: ResponseScope, values: ReadonlyArray<readonly [string, Uint8Array]>): Promise<boolean> => {
    const { section } = scope
    const done = raw.setMany(section, values, scope.ttlSeconds).then(
      () => true,
      (error: unknown) => {
        report("store failed", section.url, reasonOf(error))
        return false
      }
    )
    for (const [name] of values) pending.set(name, done)
    return done.finally(() => {
      for (const [name] of values) if (pending.get(name) === done) pending.delete(name)
    })
  }
  /** The plaintext of a value read under `key`, or undefined (none, or it does not open: logged). */
  const opened = (scope: ResponseScope, key: string, stored: Uint8Array | null | undefined): Uint8Array | undefined => {
    if (stored === null || stored === undefined) return undefined
    const plaintext = open(stored, sealOptions(scope, key))
    if (plaintext === undefined) report("unreadable entry", scope.section.url)
    return plaintext
  }
  const response = (scope: ResponseScope, id: string, key: string, stored: Uint8Array | null | undefined): StoredResponse | undefined => {
    const plaintext = opened(scope, key, stored)
    const entry = plaintext === undefined ? undefined : Result.getOrUndefined(decodeStored(plaintext))
    if (plaintext !== undefined && (entry === undefined || entry.id !== id)) report("unreadable entry", scope.section.url)
    return entry?.id === id ? entry : undefined
  }
  const item = (scope: ResponseScope, key: string, stored: Uint8Array | null | undefined): StoredItem | undefined => {
    const plaintext = opened(scope, key, stored)
    if (plaintext === undefined) return undefined
    try {
      const value: unknown = JSON.parse(toBuffer(plaintext).toString("utf8"))
      return typeof value === "object" && value !== null && !Array.isArray(value) ? value as StoredItem : undefined
    } catch {
      return undefined
    }
  }
  return ResponseStore.of({
    enabled: true,
    get: (scope, id) => {
      const key = storeKey(scope, id)
      return needing(scope.section, () => mget(scope.section, [responseRedisKey(key), responseRedisKey(claimKey(id))]), report).pipe(
        Effect.map(([stored, claim]) => ({ stored: response(scope, id, key, stored), claimed: claim !== null && claim !== undefined }))
      )
    },
    state: (scope, needs) => {
      const ids = [...(needs.previousResponseId === undefined ? [] : [needs.previousResponseId]), ...needs.itemIds]
      const keys = [
        ...(needs.previousResponseId === undefined ? [] : [storeKey(scope, needs.previousResponseId)]),
        ...needs.itemIds.map((id) => itemKey(scope, id))
      ]
      // The claims ride in the same round trip.
      const names = [...keys, ...ids.map(claimKey)].map(responseRedisKey)
      return needing(scope.section, () => mget(scope.section, names), report).pipe(
        Effect.map((values) => {
          const offset = needs.previousResponseId === undefined ? 0 : 1
          const items = new Map<string, StoredItem>()
          needs.itemIds.forEach((id, index) => {
            const found = item(scope, keys[offset + index], values[offset + index])
            if (found !== undefined) items.set(id, found)
          })
          const previous = needs.previousResponseId === undefined ? undefined : response(scope, needs.previousResponseId, keys[0], values[0])
          const claimed = new Set(ids.filter((_, index) => values[keys.length + index] != null))
          return { previous, items, claimed }
        })
      )
    },
    put: (scope, stored) =>
      Effect.suspend(() => {
        const { url } = scope.section
        const values: Array<readonly [string, Uint8Array]> = []
        try {
          const key = storeKey(scope, stored.id)
          values.push([responseRedisKey(key), seal(encodeStored(stored), sealOptions(scope, key))])
          for (const output of stored.output) {
            if (typeof output.id !== "string") continue
            const key = itemKey(scope, output.id)
            values.push([responseRedisKey(key), seal(Buffer.from(JSON.stringify(output)), sealOptions(scope, key))])
          }
          for (const id of [stored.id, ...stored.output.flatMap((output) => typeof output.id === "string" ? [output.id] : [])]) {
            values.push([responseRedisKey(claimKey(id)), CLAIMED])
          }
        } catch (error) {
          return Effect.sync(() => {
            report("store failed", url, reasonOf(error))
            return false
          })
        }
        const size = values[0][1].byteLength
        if (size > scope.section.max_entry_size_bytes) {
          // A marker instead, so the next turn is told the conversation outgrew the store.
          const key = storeKey(scope, stored.id)
          const marker = { ...stored, context: [], input: [], output: [], outgrownBytes: size }
          report("store skipped", url, `a response of ${size} bytes exceeds responses.max_entry_size_bytes`)
          return Effect.promise(() =>
            write(scope, [[responseRedisKey(key), seal(encodeStored(marker), sealOptions(scope, key))], [responseRedisKey(claimKey(stored.id)), CLAIMED]])
          ).pipe(Effect.as(false))
        }
        // Awaited (one round trip, bounded by the command timeout), so the caller's next turn finds it.
        return Effect.promise(() => write(scope, values))
      }),
    remove: (scope, id) =>
      needing(scope.section, () => raw.del(scope.section, responseRedisKey(storeKey(scope, id))), report).pipe(Effect.map((count) => count > 0))
  })
}

export class ResponseStore extends Context.Service<ResponseStore, {
  /** False when no store is configured: state-needing requests keep their 400. */
  readonly enabled: boolean
  /**
   * In one round trip: the response stored under `id` for this scope (undefined when unknown, expired,
   * another caller's or unreadable), and whether any caller's store claimed the id.
   */
  readonly get: (scope: ResponseScope, id: string) => Effect.Effect<{ readonly stored: StoredResponse | undefined; readonly claimed: boolean }, InfraError>
  /** In one round trip: the previous response and the referenced items a request needs (those the store knows). */
  readonly state: (scope: ResponseScope, needs: StateNeeds) => Effect.Effect<StoredState, InfraError>
  /** Stores the response and each of its output items (for `item_reference`) in one round trip; never fails (a failure is logged): whether it was stored. */
  readonly put: (scope: ResponseScope, response: StoredResponse) => Effect.Effect<boolean>
  /** Deletes the response; false when there was none for this scope. */
  readonly remove: (scope: ResponseScope, id: string) => Effect.Effect<boolean, InfraError>
}>()("gateway/pipeline/responses/ResponseStore") {
  /** Redis pools per url (ioredis is loaded when the layer is built, not before). */
  static readonly layer: Layer.Layer<ResponseStore, never, Log> = Layer.effect(
    ResponseStore,
    Effect.gen(function*() {
      const report = reporterOf(yield* Log)
      const poolFor = yield* scopedPools<ResponsesSection>("gateway-responses", (section) => section.timeout_ms, report)
      return makeStore({
        // A cluster keeps a caller's entries on many slots: one GET and one SET per key there (auto-pipelined per node).
        mget: (section, names) => {
          const pool = poolFor(section)
          return pool.acquire().then((client) =>
            pool.cluster ? Promise.all(names.map((name) => client.getBuffer(name))) : client.mgetBuffer(...names)
          )
        },
        setMany: (section, values, ttlSeconds) => {
          const pool = poolFor(section)
          return pool.acquire().then((client): Promise<unknown> => {
            if (pool.cluster) return Promise.all(values.map(([name, value]) => client.set(name, toBuffer(value), "EX", ttlSeconds)))
            const batch = client.multi()
            for (const [name, value] of values) batch.set(name, toBuffer(value), "EX", ttlSeconds)
            return batch.exec()
          })
        },
        del: (section, name) => poolFor(section).acquire().then((client) => client.del(name))
      }, report)
    })
  )

  /** No store configured: nothing is stored, and a request that needs state keeps its 400. */
  static readonly layerOff: Layer.Layer<ResponseStore> = Layer.succeed(ResponseStore, ResponseStore.of({
    enabled: false,
    get: () => Effect.succeed({ stored: undefined, claimed: false }),
    state: () => Effect.succeed({ previous: undefined, items: new Map(), claimed: new Set() }),
    put: () => Effect.succeed(false),
    remove: () => Effect.succeed(false)
  }))

  /** An in-memory store (the cache's `MemoryStore` shape): a test reads raw values or takes the store down. */
  static readonly layerTest = (store: MemoryStore = { values: new Map(), down: false }): Layer.Layer<ResponseStore, never, Log> =>
    Layer.effect(
      ResponseStore,
      Effect.map(Effect.service(Log), (log) => {
        const answer = memoryAnswer(store)
        const live = (name: string) => {
          const entry = store.values.get(name)
          return entry === undefined || entry.expiresAt < Date.now() ? undefined : entry
        }
        return makeStore({
          mget: (_section, names) => answer(() => names.map((name) => live(name)?.value ?? null)),
          setMany: (_section, values, ttlSeconds) =>
            answer(() => {
              for (const [name, value] of values) store.values.set(name, { value, expiresAt: Date.now() + ttlSeconds * 1000 })
            }),
          del: (_section, name) => answer(() => (live(name) !== undefined && store.values.delete(name) ? 1 : 0))
        }, reporterOf(log))
      })
    )
}
