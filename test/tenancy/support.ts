/**
 * Helpers for the tenant store tests: snapshot documents, a compile function
 * that records what it compiled, a store run in its own scope with its log
 * captured, project ids unique to one test run, and a Redis client that
 * deletes exactly the keys a test wrote.
 */
import { Effect, Exit, Scope } from "effect"
import { Redis } from "ioredis"
import { randomBytes } from "node:crypto"
import type { ValidatedSnapshot } from "../../src/config/index.ts"
import type { InfraError } from "../../src/domain/index.ts"
import { environmentsKey, tenantId } from "../../src/tenancy/index.ts"
import { makeTenantStore } from "../../src/tenancy/index.ts"
import type { SnapshotIdentity, TenantId, TenantLog, TenantStore, TenantStoreOptions } from "../../src/tenancy/index.ts"

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

/** A project id no other test run uses. */
export const uniqueProject = (name: string): string => `t-${randomBytes(5).toString("hex")}-${name}`

export const tenant = (projectId: string, envSlug = "production"): TenantId => {
  const checked = tenantId(projectId, envSlug)
  if (checked._tag === "Failure") throw checked.failure
  return checked.success
}

/** A snapshot with one OpenAI-kind provider at `baseUrl`, serving `models`. */
export const snapshotDocument = (
  version: string | number,
  options: { readonly providerId?: string; readonly baseUrl?: string; readonly models?: ReadonlyArray<string>; readonly key?: string; readonly extra?: Record<string, unknown> } = {}
): Record<string, unknown> => ({
  version,
  providers: {
    [options.providerId ?? "openai"]: {
      kind: "openai",
      base_url: options.baseUrl ?? "https://api.openai.com/v1",
      models: options.models ?? ["gpt-4o"],
      ...(options.key === undefined ? {} : { credential: { value: options.key } })
    }
  },
  ...options.extra
})

/** What the test compile function makes: enough to tell configurations apart. */
export interface Compiled {
  readonly identity: SnapshotIdentity
  readonly providers: ReadonlyArray<string>
  readonly baseUrls: ReadonlyArray<string>
  readonly disabled: ReadonlyArray<string>
  readonly snapshot: ValidatedSnapshot
}

/** A compile function that counts its calls per `project/env`. */
export const recordingCompile = () => {
  const calls = new Map<string, number>()
  const compile = (snapshot: ValidatedSnapshot, identity: SnapshotIdentity): Compiled => {
    const key = `${identity.projectId}/${identity.envSlug}`
    calls.set(key, (calls.get(key) ?? 0) + 1)
    return {
      identity,
      providers: [...snapshot.settings.providers.keys()],
      baseUrls: [...snapshot.settings.providers.values()].map((provider) => provider.baseUrl),
      disabled: [...snapshot.disabledEndpoints],
      snapshot
    }
  }
  return { compile, compiles: (projectId: string, envSlug = "production") => calls.get(`${projectId}/${envSlug}`) ?? 0 }
}

/** A log that keeps every record, plus the text of all of them (to search for secrets). */
export const capturedLog = () => {
  const lines: Array<{ level: string; msg: string; fields?: object }> = []
  const log: TenantLog = { log: (level, msg, fields) => void lines.push({ level, msg, ...(fields === undefined ? {} : { fields }) }) }
  return { log, lines, text: () => lines.map((line) => JSON.stringify(line)).join("\n") }
}

type ValueOf<S> = S extends TenantStore<infer P> ? P : never

export interface OpenStore<S extends TenantStore<any>> {
  readonly store: S
  /** The resolve outcome: the compiled value, or the `InfraError`. */
  readonly resolve: (projectId: string, envSlug?: string) => Promise<{ readonly ok: true; readonly value: ValueOf<S> } | { readonly ok: false; readonly error: InfraError }>
  readonly ready: () => Promise<boolean>
  readonly close: () => Promise<void>
}

/** Builds a scoped store; `close` ends its scope (connections, fibers). */
export const openStore = async <S extends TenantStore<any>, E>(make: Effect.Effect<S, E, Scope.Scope>): Promise<OpenStore<S>> => {
  const scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(make.pipe(Scope.provide(scope)))
  return {
    store,
    resolve: async (projectId, envSlug) => {
      const exit = await Effect.runPromise(Effect.exit(store.resolve(tenant(projectId, envSlug))))
      if (Exit.isSuccess(exit)) return { ok: true, value: exit.value as ValueOf<S> }
      const reason = exit.cause.reasons[0]
      if (reason?._tag !== "Fail") throw new Error(`resolve died: ${String(exit.cause)}`)
      return { ok: false, error: reason.error }
    },
    ready: () => Effect.runPromise(store.ready),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The version a project resolves to, or the error code its resolve fails with. */
export const versionOf = async (store: OpenStore<TenantStore<Compiled>>, projectId: string, envSlug?: string) => {
  const result = await store.resolve(projectId, envSlug)
  return result.ok ? result.value.identity.version : result.error.code
}

/**
 * Live stores on the shared Redis, with a recording compile and a captured
 * log each; `closeAll` (afterEach) ends every store started.
 */
export const liveStores = (defaults: Partial<TenantStoreOptions> = {}) => {
  const open: Array<OpenStore<TenantStore<unknown>>> = []
  return {
    start: async (overrides: Partial<TenantStoreOptions> = {}) => {
      const recorder = recordingCompile()
      const logs = capturedLog()
      const store = await openStore(makeTenantStore<Compiled>({
        redisUrl: REDIS_URL,
        capacity: 100,
        idleTimeoutMs: 60_000,
        antiEntropyIntervalMs: 60_000,
        log: logs.log,
        ...defaults,
        ...overrides
      }, recorder.compile))
      open.push(store)
      return { ...store, ...recorder, logs }
    },
    closeAll: () => Promise.all(open.splice(0).map((store) => store.close()))
  }
}

/** Polls `check` every 20 ms until it holds, for at most `timeoutMs`. */
export const eventually = async (check: () => Promise<boolean> | boolean, timeoutMs = 5_000, what = "condition"): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A Redis client for arranging tests; `cleanup` deletes every key written through `put`. */
export const redisFixture = (url = REDIS_URL) => {
  const client = new Redis(url, { maxRetriesPerRequest: 1 })
  const written = new Set<string>()
  return {
    client,
    /** SET the snapshot key and SADD the environment, as publishing does, without announcing. */
    put: async (projectId: string, envSlug: string, value: string | Record<string, unknown>) => {
      const key = tenant(projectId, envSlug).key
      written.add(key).add(environmentsKey(projectId))
      await client.set(key, typeof value === "string" ? value : JSON.stringify(value))
      await client.sadd(environmentsKey(projectId), envSlug)
    },
    forget: (projectId: string, envSlug = "production") => written.add(tenant(projectId, envSlug).key).add(environmentsKey(projectId)),
    announce: (projectId: string, envSlug: string, version: string | number) =>
      client.publish("gw:routing:updates", JSON.stringify({ projectId, envSlug, version })),
    cleanup: async () => {
      if (written.size > 0) await client.del(...written)
      client.disconnect()
    }
  }
}
