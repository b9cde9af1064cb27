/**
 * The snapshot store in Redis (`redis://` or `rediss://`, or a Redis Cluster:
 * `redis+cluster://host:port,host:port`), read with single-key commands only
 * (GET, SMEMBERS, SUBSCRIBE, PING) so a Redis Cluster serves it as well as
 * one server.
 *
 * Details
 * - Every command is bounded by `commandTimeoutMs`, and the command client
 *   has no offline queue: while Redis is down a command fails at once
 *   instead of waiting for a reconnect, so a cold tenant goes to the
 *   fallback API without delay.
 * - Updates arrive on a second connection (a subscriber cannot run other
 *   commands), which re-subscribes by itself after a reconnect; the caller
 *   hears of each reconnect so it can sweep for what it missed meanwhile.
 * - On a cluster, classic pub/sub: a PUBLISH on any node reaches a
 *   subscriber on any other, so the subscriber listens on one node; when that
 *   node is lost the client moves it to another, and the caller hears of it
 *   as of a reconnect (a sweep), since messages may have been missed between.
 * - Logs name the host and port only; the password in the URL is scrubbed
 *   from any error text.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { connectRedis, isCluster, pingAny } from "../infra/redis-client.ts"
import type { RedisClient } from "../infra/redis-client.ts"
import { redisEndpoint, redisLogTarget } from "../config/index.ts"
import type { RedisOptions } from "ioredis"
import type { SnapshotLookup, SnapshotSource, TenantLog } from "./contracts.ts"
import { SourceUnavailable } from "./contracts.ts"
import { RateLimitedLog } from "./log.ts"
import { environmentsKey, UPDATES_CHANNEL } from "./selection.ts"

/** Default bound on one Redis command (beyond spec: a cold load waits at most this long before the fallback). */
export const REDIS_COMMAND_TIMEOUT_MS = 250
/** How long startup waits for a first connection before serving through the fallback. */
const STARTUP_WAIT_MS = 2_000

export interface RedisSnapshotStore {
  readonly source: SnapshotSource
  /** PING within the command timeout. */
  readonly ping: Effect.Effect<boolean>
  /** `host:port`, for logs. */
  readonly target: string
}

export interface RedisStoreOptions {
  readonly url: string
  readonly commandTimeoutMs: number
  readonly log: TenantLog
  /** Each message on `gw:routing:updates`. */
  readonly onMessage: (message: string) => void
  /** The subscriber is connected (again): messages may have been missed while it was not. */
  readonly onReconnect: () => void
}

/** Whether a connection becomes ready before it fails or `STARTUP_WAIT_MS` passes. */
const firstReady = (connection: RedisClient): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    if (connection.status === "ready") return resume(Effect.succeed(true))
    const finish = (ok: boolean) => {
      cleanup()
      resume(Effect.succeed(ok))
    }
    const onReady = () => finish(true)
    // A refused connection answers at once; only a silent one waits out the bound.
    const onError = () => finish(false)
    const timer = setTimeout(() => finish(false), STARTUP_WAIT_MS)
    const cleanup = () => {
      clearTimeout(timer)
      connection.off("ready", onReady)
      connection.off("error", onError)
    }
    connection.once("ready", onReady)
    connection.once("error", onError)
    return Effect.sync(cleanup)
  })

/** A cluster's node changes are swept for once per this, after the subscription moved. */
const CLUSTER_SWEEP_MS = 2_000

const reconnectDelay = (times: number): number => Math.min(100 * 2 ** Math.min(times, 5), 2_000)

export const connectRedisStore = (options: RedisStoreOptions): Effect.Effect<RedisSnapshotStore, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { target, scrub } = redisLogTarget(options.url)
    const limited = new RateLimitedLog(options.log)
    const common: RedisOptions = {
      connectTimeout: Math.max(options.commandTimeoutMs, 1_000),
      retryStrategy: reconnectDelay,
      connectionName: "gateway-tenancy",
      // Closing while Redis is down: do not keep a dead socket (and the process) for ioredis's default 2 s.
      disconnectTimeout: 200
    }

    const { client, subscriber } = yield* Effect.acquireRelease(
      Effect.sync(() => ({
        client: connectRedis(redisEndpoint(options.url), {
          ...common,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
          commandTimeout: options.commandTimeoutMs
        }),
        // On a cluster, a lost node leaves the pool and rejoins it (events below), rather than reconnecting unseen.
        subscriber: connectRedis(redisEndpoint(options.url), { ...common, enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: true }, { nodeReconnect: false })
      })),
      ({ client, subscriber }) => Effect.sync(() => {
        client.disconnect()
        subscriber.disconnect()
      })
    )

    for (const [name, connection] of [["commands", client], ["updates", subscriber]] as const) {
      connection.on("error", (error: Error) =>
        limited.emit(`redis-error:${name}`, "warn", "tenant redis error", { redis: target, connection: name, error: scrub(error.message) })
      )
    }
    // Set once startup is over: a connection made after it may have missed announcements.
    let started = false
    let sweepTimer: ReturnType<typeof setTimeout> | undefined
    yield* Effect.addFinalizer(() => Effect.sync(() => clearTimeout(sweepTimer)))
    const reconnected = () => {
      if (!started) return
      options.log.log("info", "tenant redis connected", { redis: target })
      // Whatever was announced while we were away, or loaded from the fallback meanwhile, is checked now.
      options.onReconnect()
    }
    subscriber.on("ready", reconnected)
    // A cluster's subscriber moves to another node when its node is lost (the client itself stays ready),
    // and a node that comes back may have been the one publishers reached meanwhile: both are swept for,
    // once the subscription has moved, at most once per CLUSTER_SWEEP_MS (a lost node comes and goes
    // from the client's pool with every slot refresh).
    if (isCluster(subscriber)) {
      const nodesChanged = () => {
        if (!started || sweepTimer !== undefined) return
        sweepTimer = setTimeout(() => {
          sweepTimer = undefined
          options.log.log("info", "tenant redis cluster nodes changed", { redis: target })
          options.onReconnect()
        }, CLUSTER_SWEEP_MS)
        sweepTimer.unref()
      }
      subscriber.on("-node", nodesChanged)
      subscriber.on("+node", nodesChanged)
    }
    subscriber.on("message", (channel: string, message: string) => {
      if (channel === UPDATES_CHANNEL) options.onMessage(message)
    })
    // Queued until the subscriber connects; later reconnections re-subscribe by themselves.
    const subscribed = subscriber.subscribe(UPDATES_CHANNEL).then(
      () => true,
      (error: Error) => {
        limited.emit("redis-subscribe", "warn", "tenant redis subscribe failed", { redis: target, error: scrub(error.message) })
        return false
      }
    )

    const command = <A>(name: string, run: () => Promise<A>): Effect.Effect<A, SourceUnavailable> =>
      Effect.tryPromise({
        try: run,
        catch: (error) => new SourceUnavailable({ source: "redis", message: `${name}: ${scrub(error instanceof Error ? error.message : String(error))}` })
      }).pipe(
        // ioredis bounds the reply too; this also bounds a connection that never writes.
        Effect.timeoutOrElse({
          duration: options.commandTimeoutMs,
          orElse: () => Effect.fail(new SourceUnavailable({ source: "redis", message: `${name}: timed out after ${options.commandTimeoutMs} ms` }))
        })
      )

    const source: SnapshotSource = {
      lookup: (tenant) =>
        Effect.flatMap(command("GET", () => client.get(tenant.key)), (raw): Effect.Effect<SnapshotLookup, SourceUnavailable> => {
          if (raw !== null) return Effect.succeed({ _tag: "Found", raw })
          return Effect.map(command("SMEMBERS", () => client.smembers(environmentsKey(tenant.projectId))), (environments) => ({
            _tag: "Missing",
            code: environments.length > 0 ? "ENVIRONMENT_NOT_FOUND" : "ROUTING_NOT_CONFIGURED"
          }))
        })
    }

    const ping = command("PING", () => pingAny(client)).pipe(
      Effect.map((reply) => reply === "PONG"),
      Effect.catch(() => Effect.succeed(false))
    )

    // Bounded wait for the first connections: a gateway may start while Redis is down.
    // Listening before the store serves: nothing published after startup goes unheard.
    const connected = (yield* firstReady(client)) && (yield* Effect.promise(() => subscribed).pipe(
      Effect.timeoutOrElse({ duration: STARTUP_WAIT_MS, orElse: () => Effect.succeed(false) })
    ))
    started = true
    if (!connected) {
      options.log.log("warn", "tenant redis not reachable at startup; cold tenants go to the fallback API until it is", { redis: target })
    }
    return { source, ping, target }
  })
