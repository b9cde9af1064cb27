/**
 * The limits stage: rate limits and budgets of a subject (a gateway key, a
 * tenant project) counted in Redis (`[limits] url`, default the `[cache]`
 * url), so every gateway sharing the store admits no more than a limit
 * between them. One script admits a request (scripts.ts), one settles it.
 *
 * Details
 * - `admit` runs before any upstream call: over a limit the request is
 *   refused (429 `rate_limit`, or 429 `quota` for a budget) with
 *   `retry-after`, `retry-after-ms` and OpenAI's `x-ratelimit-*` headers.
 *   Admitted, it reserves its token estimate and holds a concurrency slot.
 * - `settle` (at the end of the request) frees the slot, replaces the
 *   estimate by the tokens used and adds the cost to the budgets; it never
 *   fails and never holds the request up.
 * - The store unreachable or slower than `timeout_ms`: `on_store_error`
 *   `allow` admits the request uncounted, `deny` answers 503; either way it
 *   is logged at most once per 10 s with how many requests it concerned.
 * - `layerOff` (no subject has a limit) does nothing and loads no Redis.
 *
 * Gotchas
 * - Subjects are named in the store by key name or project id, never by a
 *   key; the Redis URL's password never reaches a log (redisLogTarget).
 */
import { Context, Effect, Layer } from "effect"
import { createHash, randomUUID } from "node:crypto"
import type { CallerLimits, ConfigFile } from "../../config/index.ts"
import { GatewayError, InfraError } from "../../domain/index.ts"
import { Log } from "../../infra/log.ts"
import type { JsonLog } from "../../infra/log.ts"
import { bulkString } from "../../infra/resp.ts"
import type { RedisPool } from "../../infra/redis-pool.ts"
import { redisEndpoint, redisLogTarget } from "../../config/index.ts"
import { ADMIT, SETTLE } from "./scripts.ts"

/** Who is counted: `key:<name>` or `project:<id>`, and its limits. */
export interface LimitSubject {
  readonly id: string
  readonly limits: CallerLimits
}

/** What the request used, known at its end. */
export interface Usage {
  /** Input plus output tokens; undefined when unknown (the reservation stands); 0 when nothing was used. */
  readonly tokens: number | undefined
  /** USD; undefined when unknown (the cost reserved stands, unless nothing was used). */
  readonly costUsd: number | undefined
  /** The request never reached a provider: it leaves the request count too. */
  readonly cancel: boolean
}

export type Admission =
  | {
    readonly _tag: "Admitted"
    /** `x-ratelimit-*` of the request's answer; undefined when uncounted (the store was down). */
    readonly headers: Readonly<Record<string, string>> | undefined
    readonly settle: (usage: Usage) => void
  }
  | { readonly _tag: "Refused"; readonly error: GatewayError | InfraError; readonly headers: Readonly<Record<string, string>> }

/** Runs one script on the store: its answer, or a rejection when the store failed. */
export type RunScript = (script: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) => Promise<unknown>

export interface Script {
  readonly lua: string
  readonly sha: string
}

const script = (lua: string): Script => ({ lua, sha: createHash("sha1").update(lua).digest("hex") })
const ADMIT_SCRIPT = script(ADMIT)
const SETTLE_SCRIPT = script(SETTLE)

/** A running request's slot lapses after this if no gateway settles it (a gateway that died). */
const SLOT_TTL_MS = 15 * 60_000
const LOG_EVERY_MS = 10_000
const MICRO = 1_000_000

/** `1s`, `250ms`, `1m30s`: OpenAI's spelling of a reset time. */
export const resetText = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`
  const seconds = Math.ceil(ms / 1000)
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`
}

const utcDay = (now: Date): string => now.toISOString().slice(0, 10)
const utcMonth = (now: Date): string => now.toISOString().slice(0, 7)
const msToNextDay = (now: Date): number => Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()
const msToNextMonth = (now: Date): number => Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - now.getTime()

/**
 * How long the day's and the month's spend are kept (seconds): past their
 * period, as each is named by its day or month (a new period is a new key).
 */
const PERIOD_TTLS = [2 * 86_400, 32 * 86_400] as const

/** A subject's keys, kept for the UTC day they name (built once a day, not per request). */
const keyCache = new Map<string, { readonly until: number; readonly keys: ReadonlyArray<string> }>()

const keysOf = (subject: string, now: Date): ReadonlyArray<string> => {
  const known = keyCache.get(subject)
  if (known !== undefined && now.getTime() < known.until) return known.keys
  const base = `gw:limits:{${subject}}`
  const keys = [`${base}:req`, `${base}:conc`, `${base}:tok`, `${base}:tokv`, `${base}:usd:${utcDay(now)}`, `${base}:usd:${utcMonth(now)}`]
  if (keyCache.size >= 10_000) keyCache.clear()
  keyCache.set(subject, { until: now.getTime() + msToNextDay(now), keys })
  return keys
}

type Verdict = readonly [verdict: number, requests: number, requestsResetMs: number, tokens: number, tokensResetMs: number]

const rateHeaders = (limits: CallerLimits, [, requests, requestsReset, tokens, tokensReset]: Verdict): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (limits.requests_per_minute !== undefined) {
    headers["x-ratelimit-limit-requests"] = String(limits.requests_per_minute)
    headers["x-ratelimit-remaining-requests"] = String(Math.max(0, limits.requests_per_minute - requests))
    headers["x-ratelimit-reset-requests"] = resetText(requestsReset)
  }
  if (limits.tokens_per_minute !== undefined) {
    headers["x-ratelimit-limit-tokens"] = String(limits.tokens_per_minute)
    headers["x-ratelimit-remaining-tokens"] = String(Math.max(0, limits.tokens_per_minute - tokens))
    headers["x-ratelimit-reset-tokens"] = resetText(tokensReset)
  }
  return headers
}

const REFUSALS = {
  1: "requests per minute",
  2: "tokens per minute",
  3: "concurrent requests",
  4: "budget per day (UTC)",
  5: "budget per month (UTC)"
} as const

/** The 429 of a refused admission, with when to retry. */
const refusal = (subject: LimitSubject, verdict: Verdict, now: Date): Admission => {
  const code = verdict[0] as keyof typeof REFUSALS
  const budget = code === 4 || code === 5
  const waitMs = code === 1 ? verdict[2] : code === 2 ? verdict[4] : code === 3 ? 1000 : code === 4 ? msToNextDay(now) : msToNextMonth(now)
  const headers = rateHeaders(subject.limits, verdict)
  headers["retry-after"] = String(Math.max(1, Math.ceil(waitMs / 1000)))
  headers["retry-after-ms"] = String(Math.max(1, Math.ceil(waitMs)))
  // A spent budget does not come back in seconds: SDKs should not retry it.
  if (budget) headers["x-should-retry"] = "false"
  const reason = budget ? "quota" : "rate_limit"
  const what = subject.id.startsWith("key:") ? `gateway key "${subject.id.slice(4)}"` : `project "${subject.id.slice(8)}"`
  return {
    _tag: "Refused",
    headers,
    error: new GatewayError({ status: 429, code: reason, message: `the ${what} is over its ${REFUSALS[code]}; retry after ${resetText(waitMs)}`, classification: reason })
  }
}

/** Budgets in micro-USD (0: none). */
const budgetArgs = (limits: CallerLimits): readonly [number, number] => [
  Math.round((limits.budget_usd_per_day ?? 0) * MICRO),
  Math.round((limits.budget_usd_per_month ?? 0) * MICRO)
]

/** What a request that never ran used: it leaves the request count, its reservations are freed. */
export const CANCELLED: Usage = { tokens: 0, costUsd: undefined, cancel: true }

const UNCOUNTED: Admission = { _tag: "Admitted", headers: undefined, settle: () => {} }

/** The store failed: what `on_store_error` says, logged at most once per `LOG_EVERY_MS`. */
const storeFailures = (log: JsonLog, url: string, onError: "allow" | "deny") => {
  const target = redisLogTarget(url)
  let lastAt = 0
  let since = 0
  return (error: unknown): Admission => {
    since++
    const now = Date.now()
    if (now - lastAt >= LOG_EVERY_MS) {
      log.log("warn", "limits store unavailable", {
        url: target.shown,
        on_store_error: onError,
        requests: since,
        reason: target.scrub(error instanceof Error ? error.message : String(error))
      })
      lastAt = now
      since = 0
    }
    if (onError === "allow") return UNCOUNTED
    return {
      _tag: "Refused",
      headers: {},
      error: new InfraError({ code: "INFRA_UNAVAILABLE", message: "the limits store is unavailable; retry shortly", retryAfterMs: 1000 })
    }
  }
}

/** The stage over a script runner (Redis, or a test's). */
export const makeLimits = (run: RunScript, onStoreError: (error: unknown) => Admission, log: JsonLog) => {
  /** `reserved`: micro-USD charged at admission; undefined when the subject has no budget (nothing is charged). */
  const settleOn = (subject: LimitSubject, member: string, keys: ReadonlyArray<string>, reserved: number | undefined) => (usage: Usage): void => {
    const tokens = usage.tokens === undefined ? -1 : usage.tokens
    const charged = reserved ?? 0
    const cost = reserved === undefined ? 0 : usage.costUsd !== undefined ? Math.round(usage.costUsd * MICRO) : tokens === 0 ? 0 : reserved
    run(SETTLE_SCRIPT, keys, [
      member,
      tokens,
      cost - charged,
      usage.cancel ? 1 : 0,
      ...PERIOD_TTLS,
      subject.limits.tokens_per_minute === undefined ? 0 : 1
    ]).catch((error: unknown) => log.log("warn", "limits settlement failed", { subject: subject.id, reason: error instanceof Error ? error.message : String(error) }))
  }
  const admit = (subject: LimitSubject, estimate: Estimate): Effect.Effect<Admission> =>
    Effect.callback<Admission>((resume, signal) => {
      const now = new Date()
      const keys = keysOf(subject.id, now)
      const member = randomUUID()
      const { limits } = subject
      const [day, month] = budgetArgs(limits)
      const reserved = day > 0 || month > 0 ? Math.round(estimate.costUsd() * MICRO) : undefined
      run(ADMIT_SCRIPT, keys, [
        member,
        limits.requests_per_minute ?? 0,
        limits.tokens_per_minute ?? 0,
        limits.concurrent_requests ?? 0,
        Math.max(0, Math.ceil(estimate.tokens)),
        SLOT_TTL_MS,
        day,
        month,
        reserved ?? 0,
        ...PERIOD_TTLS
      ]).then(
        (answer) => {
          const verdict = (answer as Array<number>).map(Number) as unknown as Verdict
          if (verdict[0] !== 0) return resume(Effect.succeed(refusal(subject, verdict, now)))
          const settle = settleOn(subject, member, keys, reserved)
          // The request went (its caller left) while the store admitted it: the admission is taken back.
          if (signal.aborted) return settle(CANCELLED)
          resume(Effect.succeed({ _tag: "Admitted", headers: rateHeaders(limits, verdict), settle }))
        },
        (error: unknown) => resume(Effect.succeed(onStoreError(error)))
      )
    })
  return { enabled: true, admit }
}

export interface LimitsShape {
  /** False for `layerOff`: no subject has a limit, nothing is ever counted. */
  readonly enabled: boolean
  readonly admit: (subject: LimitSubject, estimate: Estimate) => Effect.Effect<Admission>
}

/** What an admitted request is expected to use: reserved at admission, corrected at settlement. */
export interface Estimate {
  readonly tokens: number
  /** USD; asked only of a subject with a budget (pricing needs the request's plan). */
  readonly costUsd: () => number
}

/** Whether any of the limit fields is set. */
export const hasLimits = (limits: CallerLimits): boolean =>
  limits.requests_per_minute !== undefined || limits.tokens_per_minute !== undefined || limits.concurrent_requests !== undefined ||
  limits.budget_usd_per_day !== undefined || limits.budget_usd_per_month !== undefined

/** A subject's keys in RESP (`keysOf` gives one array per subject and day): encoded once, not per command. */
const writtenKeys = new WeakMap<ReadonlyArray<string>, string>()

/** `EVALSHA sha numkeys key… arg…` in RESP, the keys' part encoded once. */
const evalshaCommand = (script: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>): string => {
  let written = writtenKeys.get(keys)
  if (written === undefined) {
    written = keys.map(bulkString).join("")
    writtenKeys.set(keys, written)
  }
  let resp = `*${3 + keys.length + args.length}\r\n$7\r\nevalsha\r\n${bulkString(script.sha)}${bulkString(keys.length)}${written}`
  for (const arg of args) resp += bulkString(arg)
  return resp
}

/** Runs a script by its SHA, loading it once when the store does not know it. */
const redisRunner = (poolOf: () => RedisPool): RunScript => (script, keys, args) => {
  const pool = poolOf()
  return pool.sendWritten("evalsha", evalshaCommand(script, keys, args), () => [script.sha, keys.length, ...keys, ...args]).catch((error: unknown) => {
    if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error
    return pool.send("eval", [script.lua, keys.length, ...keys, ...args])
  })
}

export class Limits extends Context.Service<Limits, LimitsShape>()("gateway/pipeline/limits/Limits") {
  /** Counters in Redis at `[limits] url` (else the `[cache]` url); ioredis is loaded only here. */
  static readonly layer = (file: Pick<ConfigFile, "limits" | "cache">): Layer.Layer<Limits, never, Log> =>
    Layer.effect(
      Limits,
      Effect.gen(function*() {
        const log = yield* Log
        const url = file.limits.url ?? file.cache.url
        const { RedisPool } = yield* Effect.promise(() => import("../../infra/redis-pool.ts"))
        const failed = storeFailures(log, url, file.limits.on_store_error)
        // Opened by the first admission: a multi-tenant gateway whose projects have no limits never connects.
        const opened = yield* Effect.acquireRelease(
          Effect.sync((): { pool: RedisPool | undefined } => ({ pool: undefined })),
          ({ pool }) => (pool === undefined ? Effect.void : Effect.promise(() => pool.close()))
        )
        const poolOf = (): RedisPool =>
          opened.pool ??= new RedisPool({
            endpoint: redisEndpoint(url),
            size: file.limits.pool_size,
            connectionName: "gateway-limits",
            commandTimeoutMs: file.limits.timeout_ms,
            // Failures are reported by the admissions they fail (storeFailures), at most once per 10 s.
            onError: () => {}
          })
        return Limits.of(makeLimits(redisRunner(poolOf), failed, log))
      })
    )

  /** No subject has a limit: nothing is counted or loaded. */
  static readonly layerOff: Layer.Layer<Limits> = Layer.succeed(Limits, Limits.of({ enabled: false, admit: () => Effect.succeed(UNCOUNTED) }))

  /** Over a test's script runner (a store a test can take down), with `on_store_error`. */
  static readonly layerTest = (run: RunScript, onStoreError: "allow" | "deny" = "allow"): Layer.Layer<Limits, never, Log> =>
    Layer.effect(Limits, Effect.map(Effect.service(Log), (log) => Limits.of(makeLimits(run, storeFailures(log, "redis://test", onStoreError), log))))
}
