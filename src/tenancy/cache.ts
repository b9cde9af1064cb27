/**
 * The in-memory side of the tenant store: compiled configurations in an LRU
 * (`lru-cache`: capacity plus idle expiry, the age renewed on every read),
 * loaded once per cold tenant however many requests wait, and reloaded in
 * place when an update is announced or the anti-entropy sweep sees a change.
 *
 * Details
 * - A cold tenant reads the primary source (Redis); when that cannot answer,
 *   the fallback source (the fallback API), if any; when neither can, the
 *   request gets `INFRA_UNAVAILABLE`. Missing snapshots are not cached.
 * - A stored snapshot that cannot be opened or validated is cached as a
 *   failure (`SNAPSHOT_DECRYPT_FAILED`): it fails closed until the stored
 *   value changes, without re-reading it per request.
 * - A reload that cannot reach the store keeps the last good version. A
 *   reload that finds a new value the gateway cannot open fails closed: the
 *   operator published a configuration (perhaps to revoke a key) that the
 *   gateway must not silently ignore.
 * - Compiled once per version: a changed stored value with the same version
 *   (a re-seal) keeps the compiled configuration.
 *
 * Gotchas
 * - Reloads mutate the cached entry in place, so neither its recency nor its
 *   idle age changes: a sweep never keeps an idle tenant alive.
 */
import { Deferred, Effect, Result, Schedule } from "effect"
import type { Scope } from "effect"
import { LRUCache } from "lru-cache"
import { createHash } from "node:crypto"
import { InfraError } from "../domain/index.ts"
import type { CompileSnapshot, LoadedSnapshot, SnapshotLookup, SnapshotSource, SourceUnavailable, TenantLog } from "./contracts.ts"
import { RateLimitedLog } from "./log.ts"
import type { Opened } from "./open-snapshot.ts"
import { tenantId } from "./selection.ts"
import type { TenantId } from "./selection.ts"

/** The pause `INFRA_UNAVAILABLE` asks callers to take (`retry-after-ms`). */
const INFRA_RETRY_AFTER_MS = 500
const SWEEP_CONCURRENCY = 8

type State<P> =
  | { readonly _tag: "Ready"; readonly version: string; readonly value: P }
  | { readonly _tag: "Failed"; readonly error: InfraError }

interface Entry<P> {
  readonly tenant: TenantId
  /** SHA-256 of the stored value: the sweep compares it, so it need not open sealed values. */
  digest: string
  state: State<P>
}

export interface TenantCacheOptions<P> {
  readonly capacity: number
  readonly idleTimeoutMs: number
  /** Anti-entropy sweep period; undefined: no sweep (a source that cannot change behind our back). */
  readonly sweepIntervalMs?: number | undefined
  readonly primary: SnapshotSource
  readonly fallback?: SnapshotSource | undefined
  /** Opens and validates a stored value (decrypt, rules of the file). */
  readonly open: (raw: string, tenant: TenantId) => Opened
  readonly compile: CompileSnapshot<P>
  readonly log: TenantLog
}

export interface TenantCache<P> {
  readonly resolve: (tenant: TenantId) => Effect.Effect<P, InfraError>
  /** An update was announced: reload the tenant if cached at another version. */
  readonly announce: (update: { readonly projectId: string; readonly envSlug: string; readonly version: string }) => Effect.Effect<void>
  /** Compares every cached tenant with the primary source and reloads what changed. */
  readonly sweep: Effect.Effect<void>
  /** Cached tenants (idle ones may linger until the next purge). */
  readonly size: () => number
  /** The snapshots loaded now, with their versions (`/status`). */
  readonly loaded: () => ReadonlyArray<LoadedSnapshot>
}

const digestOf = (raw: string): string => createHash("sha256").update(raw).digest("base64")

const unavailable = (tenant: TenantId) =>
  new InfraError({
    code: "INFRA_UNAVAILABLE",
    message: `the routing configuration of project "${tenant.projectId}" cannot be loaded right now; retry shortly`,
    retryAfterMs: INFRA_RETRY_AFTER_MS
  })

const missing = (tenant: TenantId, code: "ROUTING_NOT_CONFIGURED" | "ENVIRONMENT_NOT_FOUND") =>
  new InfraError({
    code,
    message: code === "ROUTING_NOT_CONFIGURED"
      ? `project "${tenant.projectId}" has no routing configuration`
      : `project "${tenant.projectId}" has no environment "${tenant.envSlug}"`
  })

const refused = (tenant: TenantId) =>
  new InfraError({
    code: "SNAPSHOT_DECRYPT_FAILED",
    message: `the routing configuration of project "${tenant.projectId}" (environment "${tenant.envSlug}") cannot be opened; it must be republished`
  })

export const makeTenantCache = <P>(options: TenantCacheOptions<P>): Effect.Effect<TenantCache<P>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const { primary, fallback, log } = options
    const limited = new RateLimitedLog(log)
    const lru = new LRUCache<string, Entry<P>>({ max: options.capacity, ttl: options.idleTimeoutMs, updateAgeOnGet: true })
    const loading = new Map<string, Deferred.Deferred<P, InfraError>>()
    const reloading = new Set<string>()
    const announcedWhileLoading = new Set<string>()

    const fields = (tenant: TenantId) => ({ project_id: tenant.projectId, env: tenant.envSlug })

    /** The entry a stored value makes, reusing `previous` when nothing it compiled from changed. */
    const build = (tenant: TenantId, raw: string, previous?: Entry<P>): Entry<P> => {
      const digest = digestOf(raw)
      if (previous !== undefined && previous.digest === digest) return previous
      const opened = options.open(raw, tenant)
      if (Result.isFailure(opened)) {
        limited.emit(`refused:${tenant.key}`, "error", "tenant snapshot refused", { ...fields(tenant), reason: opened.failure })
        return { tenant, digest, state: { _tag: "Failed", error: refused(tenant) } }
      }
      const snapshot = opened.success
      if (previous?.state._tag === "Ready" && previous.state.version === snapshot.version) {
        return { tenant, digest, state: previous.state }
      }
      try {
        const value = options.compile(snapshot, { projectId: tenant.projectId, envSlug: tenant.envSlug, version: snapshot.version })
        log.log("info", "tenant snapshot loaded", { ...fields(tenant), version: snapshot.version })
        for (const warning of snapshot.settings.warnings) {
          log.log("warn", "tenant snapshot warning", { ...fields(tenant), version: snapshot.version, warning })
        }
        return { tenant, digest, state: { _tag: "Ready", version: snapshot.version, value } }
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : "compile failed"
        limited.emit(`refused:${tenant.key}`, "error", "tenant snapshot refused", { ...fields(tenant), version: snapshot.version, reason })
        return { tenant, digest, state: { _tag: "Failed", error: refused(tenant) } }
      }
    }

    const settle = (entry: Entry<P>): Effect.Effect<P, InfraError> =>
      entry.state._tag === "Ready" ? Effect.succeed(entry.state.value) : Effect.fail(entry.state.error)

    const noteUnavailable = (error: SourceUnavailable, context: string) =>
      limited.emit(`unavailable:${error.source}:${context}`, "warn", "tenant snapshot source unavailable", {
        source: error.source,
        during: context,
        error: error.message
      })

    /** Primary, then fallback; `INFRA_UNAVAILABLE` when neither answers. */
    const lookup = (tenant: TenantId): Effect.Effect<SnapshotLookup, InfraError> =>
      primary.lookup(tenant).pipe(
        Effect.catch((error: SourceUnavailable) => {
          noteUnavailable(error, "load")
          if (fallback === undefined) return Effect.fail(unavailable(tenant))
          return fallback.lookup(tenant).pipe(
            Effect.catch((fallbackError: SourceUnavailable) => {
              noteUnavailable(fallbackError, "load")
              return Effect.fail(unavailable(tenant))
            })
          )
        })
      )

    // A span on the cold path only: a warm resolve is a map lookup and stays untraced.
    const load = (tenant: TenantId): Effect.Effect<P, InfraError> =>
      Effect.flatMap(lookup(tenant), (found) => {
        if (found._tag === "Missing") return Effect.fail(missing(tenant, found.code))
        const entry = build(tenant, found.raw)
        lru.set(tenant.key, entry)
        return settle(entry)
      }).pipe(Effect.withSpan("TenantStore.load", { attributes: { "gateway.project_id": tenant.projectId, "gateway.environment": tenant.envSlug } }))

    /** One load per cold tenant: later callers wait for the first one's result. */
    const loadOnce = (tenant: TenantId): Effect.Effect<P, InfraError> =>
      Effect.suspend(() => {
        const pending = loading.get(tenant.key)
        if (pending !== undefined) return Deferred.await(pending)
        const deferred = Deferred.makeUnsafe<P, InfraError>()
        loading.set(tenant.key, deferred)
        // Forked into the store's scope: a caller that goes away does not cancel the others' load.
        const run = load(tenant).pipe(
          Effect.exit,
          Effect.flatMap((exit) => {
            loading.delete(tenant.key)
            return Deferred.done(deferred, exit)
          }),
          // An update announced while this load was reading may be newer than what it read.
          Effect.andThen(Effect.suspend(() => {
            const entry = announcedWhileLoading.delete(tenant.key) ? lru.peek(tenant.key) : undefined
            return entry === undefined ? Effect.void : reload(entry, "update")
          })),
          Effect.forkIn(scope)
        )
        return Effect.andThen(run, Deferred.await(deferred))
      })

    const resolve = (tenant: TenantId): Effect.Effect<P, InfraError> => {
      const entry = lru.get(tenant.key)
      return entry === undefined ? loadOnce(tenant) : settle(entry)
    }

    /**
     * Reloads a cached tenant from the primary source. An unreachable source
     * keeps what is cached; the result says whether the source answered.
     */
    const reload = (entry: Entry<P>, during: "update" | "sweep"): Effect.Effect<boolean> => {
      const { tenant } = entry
      if (reloading.has(tenant.key)) return Effect.succeed(true)
      reloading.add(tenant.key)
      return primary.lookup(tenant).pipe(
        Effect.map((found) => {
          // Evicted meanwhile: nothing to refresh.
          if (lru.peek(tenant.key) !== entry) return true
          if (found._tag === "Missing") {
            lru.delete(tenant.key)
            log.log("info", "tenant snapshot removed", fields(tenant))
            return true
          }
          const next = build(tenant, found.raw, entry)
          entry.digest = next.digest
          entry.state = next.state
          return true
        }),
        Effect.catch((error: SourceUnavailable) =>
          Effect.sync(() => {
            // A sweep reports once for all its tenants (below), not once per tenant.
            if (during === "update" && entry.state._tag === "Ready") {
              noteUnavailable(error, during)
              limited.emit(`stale:${tenant.key}`, "warn", "tenant snapshot reload failed; serving the last good version", {
                ...fields(tenant),
                version: entry.state.version
              })
            }
            return false
          })
        ),
        Effect.ensuring(Effect.sync(() => reloading.delete(tenant.key)))
      )
    }

    const announce: TenantCache<P>["announce"] = (update) =>
      Effect.suspend(() => {
        const checked = tenantId(update.projectId, update.envSlug)
        if (checked._tag === "Failure") return Effect.void
        const { key } = checked.success
        if (loading.has(key)) {
          announcedWhileLoading.add(key)
          return Effect.void
        }
        const entry = lru.peek(key)
        if (entry === undefined) return Effect.void
        if (entry.state._tag === "Ready" && entry.state.version === update.version) return Effect.void
        return Effect.asVoid(reload(entry, "update"))
      })

    const sweep = Effect.suspend(() => {
      lru.purgeStale()
      const entries = [...lru.values()]
      return Effect.map(
        Effect.forEach(entries, (entry) => reload(entry, "sweep"), { concurrency: SWEEP_CONCURRENCY }),
        (answered) => {
          const missed = answered.filter((ok) => !ok).length
          if (missed > 0) {
            limited.emit("stale:sweep", "warn", "anti-entropy sweep could not reach the snapshot store; cached versions are kept", {
              tenants: entries.length,
              unreached: missed
            })
          }
        }
      )
    })

    // Idle entries are refused on read at once; purging also frees their memory.
    yield* Effect.sync(() => lru.purgeStale()).pipe(
      Effect.repeat(Schedule.spaced(Math.min(options.idleTimeoutMs, 60_000))),
      Effect.forkScoped
    )
    if (options.sweepIntervalMs !== undefined) {
      yield* sweep.pipe(Effect.repeat(Schedule.spaced(options.sweepIntervalMs)), Effect.delay(options.sweepIntervalMs), Effect.forkScoped)
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => lru.clear()))

    const loaded = () =>
      [...lru.values()].flatMap(({ tenant, state }) =>
        state._tag === "Ready" ? [{ project_id: tenant.projectId, environment: tenant.envSlug, version: state.version }] : []
      )
    return { resolve, announce, sweep, size: () => lru.size, loaded }
  })
