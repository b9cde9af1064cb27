/**
 * The tenant store (multi-tenant mode, docs/multi-tenant.md): for a request's
 * project and environment, the compiled configuration of its snapshot.
 *
 * `makeTenantStore` is the live store: snapshots in Redis, updates on
 * `gw:routing:updates`, an anti-entropy sweep, the fallback API for cold
 * tenants while Redis is down, sealed snapshots opened with the gateway's
 * private key. `makeTenantStoreFromSnapshots` serves a map through the same
 * cache, opening and validation, for tests that run tenant mode without Redis.
 *
 * Both are generic over the compiled form `P` (see `TenantStore` in
 * contracts.ts) and scoped: closing the scope stops the sweep and the
 * subscriber and closes the Redis connections.
 */
import { Effect, Queue, Redacted, Result, Schema } from "effect"
import type { Scope } from "effect"
import type { KeyObject } from "node:crypto"
import type { ConfigFile, GatewaySettings } from "../config/index.ts"
import { makeTenantCache } from "./cache.ts"
import type { CompileSnapshot, SnapshotLookup, SnapshotSource, TenantLog, TenantStore } from "./contracts.ts"
import { SourceUnavailable } from "./contracts.ts"
import { makeFallbackSource } from "./fallback-api.ts"
import { openSnapshot } from "./open-snapshot.ts"
import { connectRedisStore, REDIS_COMMAND_TIMEOUT_MS } from "./redis.ts"
import { readPrivateKeyFile } from "./sealing.ts"
import { parseUpdate, tenantId } from "./selection.ts"

/** The store could not start (an unreadable or malformed private key). */
export class TenantStoreError extends Schema.TaggedError<TenantStoreError>()("TenantStoreError", {
  message: Schema.String
}) {}

export interface TenantStoreOptions {
  readonly redisUrl: string
  readonly capacity: number
  readonly idleTimeoutMs: number
  readonly antiEntropyIntervalMs: number
  /** Bound on each Redis command (default 250 ms). */
  readonly redisCommandTimeoutMs?: number | undefined
  readonly fallback?: {
    readonly baseUrl: string
    readonly authToken: Redacted.Redacted<string> | undefined
    readonly timeoutMs: number
  } | undefined
  readonly privateKeyPath?: string | undefined
  /** The gateway's own file, whose [server], [telemetry]… every snapshot's settings carry. */
  readonly gateway?: ConfigFile | undefined
  readonly log: TenantLog
}

/** The store's options from the validated `[tenant_routing]` section. */
export const tenantStoreOptions = (settings: GatewaySettings, log: TenantLog): TenantStoreOptions => {
  const section = settings.file.tenant_routing
  const token = section.api_fallback_auth_token
  return {
    redisUrl: section.redis_url,
    capacity: section.lru_capacity,
    idleTimeoutMs: section.lru_idle_timeout_secs * 1000,
    antiEntropyIntervalMs: section.anti_entropy_interval_secs * 1000,
    fallback: section.api_fallback_url === undefined || section.api_fallback_url === ""
      ? undefined
      : {
        baseUrl: section.api_fallback_url,
        authToken: token === undefined || token === "" ? undefined : Redacted.make(token),
        timeoutMs: section.api_fallback_timeout_ms
      },
    privateKeyPath: section.private_key_path,
    gateway: settings.file,
    log
  }
}

const loadPrivateKey = (path: string | undefined, log: TenantLog): Effect.Effect<KeyObject | undefined, TenantStoreError> =>
  Effect.suspend(() => {
    if (path === undefined || path === "") {
      log.log("warn", "tenant snapshots are read as plaintext JSON: development only (set tenant_routing.private_key_path)")
      return Effect.succeed(undefined)
    }
    const read = readPrivateKeyFile(path)
    if (Result.isFailure(read)) return Effect.fail(new TenantStoreError({ message: read.failure }))
    for (const warning of read.success.warnings) log.log("warn", "tenant private key warning", { warning })
    return Effect.succeed(read.success.key)
  })

type Signal = { readonly _tag: "message"; readonly text: string } | { readonly _tag: "sweep" }

/** The live store. Starts even while Redis is down (cold tenants then use the fallback API). */
export const makeTenantStore = <P>(
  options: TenantStoreOptions,
  compile: CompileSnapshot<P>
): Effect.Effect<TenantStore<P>, TenantStoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const { log } = options
    const privateKey = yield* loadPrivateKey(options.privateKeyPath, log)
    if (options.fallback !== undefined && options.fallback.authToken === undefined) {
      log.log("warn", "tenant_routing.api_fallback_url is set without api_fallback_auth_token: the fallback API will refuse to mint read tokens")
    }
    // Redis callbacks only enqueue; one fiber applies them, and a flood drops what the sweep will catch.
    const signals = yield* Queue.dropping<Signal>(1024)
    const redis = yield* connectRedisStore({
      url: options.redisUrl,
      commandTimeoutMs: options.redisCommandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_MS,
      log,
      onMessage: (text) => void Queue.offerUnsafe(signals, { _tag: "message", text }),
      onReconnect: () => void Queue.offerUnsafe(signals, { _tag: "sweep" })
    })
    const cache = yield* makeTenantCache<P>({
      capacity: options.capacity,
      idleTimeoutMs: options.idleTimeoutMs,
      sweepIntervalMs: options.antiEntropyIntervalMs,
      primary: redis.source,
      fallback: options.fallback === undefined ? undefined : makeFallbackSource(options.fallback),
      open: (raw, tenant) => openSnapshot(raw, privateKey, `snapshot ${tenant.key}`, options.gateway),
      compile,
      log
    })
    yield* Queue.take(signals).pipe(
      Effect.flatMap((signal) => {
        if (signal._tag === "sweep") return cache.sweep
        const update = parseUpdate(signal.text)
        return update === undefined ? Effect.void : cache.announce(update)
      }),
      Effect.forever,
      Effect.forkScoped
    )
    log.log("info", "tenant store started", {
      redis: redis.target,
      sealed: privateKey !== undefined,
      fallback: options.fallback !== undefined,
      lru_capacity: options.capacity
    })
    return { resolve: cache.resolve, ready: redis.ping, loaded: cache.loaded }
  })

/** The in-memory store for tests: the same cache, opening and validation, over a map. */
export interface TestTenantStore<P> extends TenantStore<P> {
  /** Stores a snapshot (a document, or the stored text such as an envelope) and announces it. */
  readonly publish: (projectId: string, envSlug: string, snapshot: unknown) => Effect.Effect<void>
  /** While false, the store answers as if neither Redis nor the fallback API could. */
  readonly setAvailable: (available: boolean) => void
}

/**
 * `snapshots[projectId][envSlug]` is a snapshot document or its stored text.
 * `privateKey` makes it a sealed store (then documents must be envelopes).
 */
export const makeTenantStoreFromSnapshots = <P>(
  snapshots: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  compile: CompileSnapshot<P>,
  options: { readonly privateKey?: KeyObject; readonly capacity?: number; readonly log?: TenantLog; readonly gateway?: ConfigFile } = {}
): Effect.Effect<TestTenantStore<P>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const stored = new Map<string, Map<string, string>>()
    const put = (projectId: string, envSlug: string, snapshot: unknown) => {
      const environments = stored.get(projectId) ?? new Map<string, string>()
      environments.set(envSlug, typeof snapshot === "string" ? snapshot : JSON.stringify(snapshot))
      stored.set(projectId, environments)
    }
    for (const [projectId, environments] of Object.entries(snapshots)) {
      for (const [envSlug, snapshot] of Object.entries(environments)) put(projectId, envSlug, snapshot)
    }
    let available = true
    const source: SnapshotSource = {
      lookup: (tenant) =>
        Effect.suspend((): Effect.Effect<SnapshotLookup, SourceUnavailable> => {
          if (!available) return Effect.fail(new SourceUnavailable({ source: "map", message: "marked unavailable" }))
          const environments = stored.get(tenant.projectId)
          const raw = environments?.get(tenant.envSlug)
          if (raw !== undefined) return Effect.succeed({ _tag: "Found", raw })
          return Effect.succeed({ _tag: "Missing", code: environments === undefined ? "ROUTING_NOT_CONFIGURED" : "ENVIRONMENT_NOT_FOUND" })
        })
    }
    const log = options.log ?? { log: () => {} }
    const cache = yield* makeTenantCache<P>({
      capacity: options.capacity ?? 1000,
      idleTimeoutMs: 3_600_000,
      primary: source,
      open: (raw, tenant) => openSnapshot(raw, options.privateKey, `snapshot ${tenant.key}`, options.gateway),
      compile,
      log
    })
    return {
      resolve: cache.resolve,
      ready: Effect.sync(() => available),
      loaded: cache.loaded,
      setAvailable: (value) => void (available = value),
      publish: (projectId, envSlug, snapshot) =>
        Effect.suspend(() => {
          if (tenantId(projectId, envSlug)._tag === "Failure") return Effect.die(new Error(`invalid tenant ${projectId}/${envSlug}`))
          put(projectId, envSlug, snapshot)
          const version = typeof snapshot === "object" && snapshot !== null ? (snapshot as { version?: unknown }).version : undefined
          // A stored text (an envelope) does not show its version: "" never matches one, so it reloads.
          return cache.announce({ projectId, envSlug, version: version === undefined ? "" : String(version) })
        })
    }
  })
