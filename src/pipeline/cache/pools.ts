/**
 * Redis pools per distinct URL for a store of answers (the cache, the
 * Responses store): opened on first use, shared by every project naming that
 * URL, closed with the scope. ioredis is loaded when the pools are made, not
 * before, so a gateway without such a store never loads it.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { redisEndpoint } from "../../config/index.ts"
import type { RedisPool } from "../../infra/redis-pool.ts"
import type { ReportFailure } from "./failures.ts"

export interface PooledSection {
  readonly url: string
  readonly pool_size: number
}

/** The pool of a section's url, made on first use. */
export const scopedPools = <S extends PooledSection>(
  connectionName: string,
  commandTimeoutMs: (section: S) => number,
  report: ReportFailure
): Effect.Effect<(section: S) => RedisPool, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { RedisPool } = yield* Effect.promise(() => import("../../infra/redis-pool.ts"))
    const pools = yield* Effect.acquireRelease(
      Effect.sync(() => new Map<string, RedisPool>()),
      (pools) => Effect.promise(() => Promise.all([...pools.values()].map((pool) => pool.close())))
    )
    return (section: S): RedisPool => {
      let pool = pools.get(section.url)
      if (pool === undefined) {
        pool = new RedisPool({
          endpoint: redisEndpoint(section.url),
          size: section.pool_size,
          connectionName,
          commandTimeoutMs: commandTimeoutMs(section),
          onError: (error) => report("connection", section.url, error.message)
        })
        pools.set(section.url, pool)
      }
      return pool
    }
  })
