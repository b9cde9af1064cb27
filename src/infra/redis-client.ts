/**
 * One ioredis client for a Redis URL as `parseRedisUrl` (src/config/redis-url.ts)
 * read it: a `Redis` for one server, a `Cluster` for `redis+cluster://` or a
 * list of seed nodes, with the same options either way, so a store written
 * against one server runs on a cluster unchanged as long as each of its
 * commands (a script, a MULTI, an MGET) names keys of one slot.
 *
 * Details
 * - A cluster's node connections take the server options (timeouts, name,
 *   auth, TLS) and reconnect with the same `retryStrategy` (unless
 *   `nodeReconnect: false`), so a master that restarts is used again as soon
 *   as it answers; the slot map is refreshed every `SLOTS_REFRESH_MS` and on
 *   every MOVED, so a promoted replica is found within that.
 * - Without an offline queue a command for a node that is down fails at once,
 *   as on one server: no wait for a failover (`retryDelayOnFailover` and
 *   `retryDelayOnClusterDown` are 0). A MOVED or ASK (the slot moved, a
 *   replica was promoted) is still followed.
 * - A cluster's "ready" means its slot map is loaded; one master down leaves
 *   it ready (its slots fail, the others serve).
 *
 * Gotchas
 * - A cluster has one database: MGET, MULTI and scripts over keys of several
 *   slots fail with CROSSSLOT. Callers either name keys with one hash tag
 *   (`{subject}`) or send one command per key (`isCluster`).
 */
import { Cluster, Redis } from "ioredis"
import type { ClusterOptions, RedisOptions } from "ioredis"

export type RedisClient = Redis | Cluster

/** Where the store is: the shape of `parseRedisUrl`'s answer (src/config/redis-url.ts). */
export type RedisEndpoint =
  | { readonly _tag: "Server"; readonly url: string }
  | {
    readonly _tag: "Cluster"
    readonly tls: boolean
    readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>
    readonly username: string | undefined
    readonly password: string | undefined
  }

/** How often a cluster client re-reads the slot map, besides on MOVED. */
const SLOTS_REFRESH_MS = 2_000

export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster

/**
 * PING for a readiness report: one server answers, or any master of a
 * cluster does (a lost master fails its own slots only; a plain PING would
 * go to a random master and make readiness flap while the others serve).
 */
export const pingAny = (client: RedisClient): Promise<string> => {
  if (!isCluster(client)) return client.ping()
  const ready = client.nodes("master").filter((node) => node.status === "ready")
  return ready.length === 0 ? Promise.reject(new Error("no master of the cluster is connected")) : Promise.any(ready.map((node) => node.ping()))
}

export interface ClusterChoices {
  /**
   * False: a cluster node whose connection is lost leaves the client's pool
   * ("-node") and comes back with the next slot map ("+node"), so a caller can
   * hear of it; true (default): the node's connection reconnects by itself.
   */
  readonly nodeReconnect?: boolean
}

/** A client for the endpoint: connecting at once unless `lazyConnect`. */
export const connectRedis = (target: RedisEndpoint, options: RedisOptions, choices: ClusterChoices = {}): RedisClient => {
  if (target._tag === "Server") return new Redis(target.url, options)
  const { enableOfflineQueue, retryStrategy, enableAutoPipelining, lazyConnect, ...server } = options
  const clusterOptions: ClusterOptions = {
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableAutoPipelining: enableAutoPipelining ?? false,
    lazyConnect: lazyConnect ?? false,
    // Not waiting out a failover: fail now (the store's failure rule applies), the next command finds the new map.
    retryDelayOnFailover: enableOfflineQueue === false ? 0 : 100,
    retryDelayOnClusterDown: enableOfflineQueue === false ? 0 : 100,
    maxRedirections: 6,
    slotsRefreshTimeout: Math.min(server.connectTimeout ?? 1_000, 1_000),
    slotsRefreshInterval: SLOTS_REFRESH_MS,
    ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: retryStrategy }),
    ...(retryStrategy === undefined || choices.nodeReconnect === false ? {} : { clusterNodeRetryStrategy: retryStrategy }),
    redisOptions: {
      ...server,
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {})
    }
  }
  return new Cluster(target.nodes.map((node) => ({ host: node.host, port: node.port })), clusterOptions)
}
