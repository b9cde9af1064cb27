/**
 * The platform auth exchange (docs/reference/gateway-spec.md §5, `[auth]`), for customer-hosted gateways:
 * every request's platform key (`x-gw-authorization: Bearer <key>`) and
 * project (`x-gw-project-id`), or the `api_token` / `project_id` stand-ins,
 * are exchanged at `exchange_url` for a short-lived token, which is the
 * credential of that request's GenAI telemetry export.
 *
 * - `POST exchange_url`, `Authorization: Bearer <key>`, `{"project_id": …}` →
 *   `{"token": …, "expires_in": <seconds>}`.
 * - Tokens are cached per (key, project) until `expires_in − cache_skew_seconds`;
 *   the cache is keyed by a SHA-256 fingerprint of the key, never the key, and
 *   holds at most `MAX_CACHED` pairs. Concurrent requests for a pair share
 *   one exchange in flight.
 * - 401 → the caller gets 401 `auth`, 403 (or another 4xx) → 403 `forbidden`;
 *   unreachable, timed out (`exchange_timeout_ms`), 429, 5xx or an answer
 *   without a token → 503 `INFRA_UNAVAILABLE`. Nothing is sent upstream.
 *
 * Gotchas
 * - The key and the token never reach a log line, a span or an error body:
 *   errors say what failed, the token is held as `Redacted`.
 * - A failed exchange is not cached: the next request asks again (the exchange
 *   itself must rate-limit a caller that keeps sending a bad key).
 */
import { Context, Effect, Layer, Redacted, Result } from "effect"
import type { Clock } from "effect"
import { createHash } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import { Pool, request } from "../providers/undici.ts"
import type { ConfigFile } from "../config/index.ts"
import { GatewayError, InfraError } from "../domain/index.ts"
import { Log } from "../infra/log.ts"
import type { JsonLog } from "../infra/log.ts"

/** A platform token for one request's project. Structurally a telemetry `ExportCredential`. */
export interface PlatformToken {
  readonly token: Redacted.Redacted<string>
  /** SHA-256 of the token (hex, 32 characters): names it in maps without holding it as a key. */
  readonly fingerprint: string
  /** When the exchange said the token expires (epoch ms). */
  readonly expiresAt: number
  readonly projectId: string
}

export interface PlatformAuthShape {
  readonly enabled: boolean
  /**
   * The request's platform token, from the cache or an exchange; undefined
   * when `[auth]` is off. Fails with the error the caller must get.
   */
  readonly authenticate: (headers: IncomingHttpHeaders) => Effect.Effect<PlatformToken | undefined, GatewayError | InfraError>
}

const MAX_CACHED = 10_000
const MAX_ANSWER_BYTES = 64 * 1024
const RETRY_AFTER_MS = 1000
const LOG_INTERVAL_MS = 10_000

const fingerprint = (secret: string): string => createHash("sha256").update(secret).digest("hex").slice(0, 32)

const denied = (reason: "auth" | "forbidden", message: string): GatewayError =>
  new GatewayError({ status: reason === "auth" ? 401 : 403, code: reason, message, classification: reason })

const unavailable = (why: string): InfraError =>
  new InfraError({ code: "INFRA_UNAVAILABLE", message: `the platform credential exchange is unavailable (${why}); retry shortly`, retryAfterMs: RETRY_AFTER_MS })

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined => (Array.isArray(value) ? value[0] : (value as string | undefined))

const BEARER = /^bearer\s+(\S+)\s*$/i

/** The request's platform key and project: headers first, then the configuration's stand-ins. */
const platformCredentials = (
  headers: IncomingHttpHeaders,
  settings: ConfigFile["auth"]
): Result.Result<{ readonly key: string; readonly projectId: string }, GatewayError> => {
  const authorization = single(headers["x-gw-authorization"])
  let key: string | undefined
  if (authorization !== undefined) {
    key = BEARER.exec(authorization)?.[1]
    if (key === undefined) return Result.fail(denied("auth", "x-gw-authorization must be `Bearer <platform API key>`"))
  } else {
    key = settings.api_token === "" ? undefined : settings.api_token
  }
  if (key === undefined) return Result.fail(denied("auth", "missing platform credential: send x-gw-authorization: Bearer <platform API key>"))
  const projectId = single(headers["x-gw-project-id"])?.trim() || (settings.project_id === "" ? undefined : settings.project_id)
  if (projectId === undefined) return Result.fail(denied("auth", "missing x-gw-project-id"))
  return Result.succeed({ key, projectId })
}

type Outcome =
  | { readonly _tag: "Token"; readonly token: PlatformToken; readonly validUntil: number }
  | { readonly _tag: "Failed"; readonly error: GatewayError | InfraError; readonly reason?: string }

/** Reads the exchange's answer: a token and its lifetime, or why there is none. */
const outcomeOf = (status: number, text: string, projectId: string, skewSeconds: number, now: number): Outcome => {
  if (status === 401) return { _tag: "Failed", error: denied("auth", "the platform credential was rejected") }
  if (status === 403) return { _tag: "Failed", error: denied("forbidden", "the platform credential is not permitted for this project") }
  if (status === 429 || status >= 500) return { _tag: "Failed", error: unavailable(`status ${status}`), reason: `status ${status}` }
  if (status >= 400) return { _tag: "Failed", error: denied("forbidden", `the platform credential exchange refused this project (status ${status})`) }
  let answer: unknown
  try {
    answer = JSON.parse(text)
  } catch {
    answer = undefined
  }
  const { token, expires_in } = (typeof answer === "object" && answer !== null ? answer : {}) as { token?: unknown; expires_in?: unknown }
  if (typeof token !== "string" || token === "" || typeof expires_in !== "number" || !Number.isFinite(expires_in) || expires_in < 0) {
    return { _tag: "Failed", error: unavailable("malformed answer"), reason: "malformed answer" }
  }
  return {
    _tag: "Token",
    token: { token: Redacted.make(token), fingerprint: fingerprint(token), expiresAt: now + expires_in * 1000, projectId },
    validUntil: now + (expires_in - skewSeconds) * 1000
  }
}

/** The live exchange over one undici pool to `exchange_url`'s origin. */
const makeLive = (settings: ConfigFile["auth"], log: JsonLog, pool: Pool): PlatformAuthShape => {
  const url = new URL(settings.exchange_url!)
  const path = `${url.pathname}${url.search}`
  const cache = new Map<string, { readonly token: PlatformToken; readonly validUntil: number }>()
  const inFlight = new Map<string, Promise<Outcome>>()
  let lastLogged = Number.NEGATIVE_INFINITY

  const report = (reason: string): void => {
    const now = performance.now()
    if (now - lastLogged < LOG_INTERVAL_MS) return
    lastLogged = now
    log.log("warn", "platform auth exchange failed", { reason, exchange: url.origin })
  }

  const exchange = async (key: string, projectId: string, clock: Clock.Clock): Promise<Outcome> => {
    try {
      const response = await request(pool, {
        method: "POST",
        path,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ project_id: projectId }),
        signal: AbortSignal.timeout(settings.exchange_timeout_ms)
      })
      const chunks: Array<Buffer> = []
      let size = 0
      if (response.statusCode >= 200 && response.statusCode < 300) {
        for await (const chunk of response.body) {
          size += (chunk as Buffer).byteLength
          if (size > MAX_ANSWER_BYTES) {
            response.body.destroy()
            return { _tag: "Failed", error: unavailable("oversized answer"), reason: "oversized answer" }
          }
          chunks.push(chunk as Buffer)
        }
      } else {
        await response.body.dump()
      }
      const text = Buffer.concat(chunks).toString("utf8")
      return outcomeOf(response.statusCode, text, projectId, settings.cache_skew_seconds, clock.currentTimeMillisUnsafe())
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")
      const why = timedOut ? `timed out after ${settings.exchange_timeout_ms} ms` : "unreachable"
      return { _tag: "Failed", error: unavailable(why), reason: why }
    }
  }

  const shared = (cacheKey: string, key: string, projectId: string, clock: Clock.Clock): Promise<Outcome> => {
    let pending = inFlight.get(cacheKey)
    if (pending === undefined) {
      pending = exchange(key, projectId, clock).then((outcome) => {
        inFlight.delete(cacheKey)
        if (outcome._tag === "Token" && outcome.validUntil > clock.currentTimeMillisUnsafe()) {
          cache.delete(cacheKey)
          if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!)
          cache.set(cacheKey, outcome)
        } else if (outcome._tag === "Failed" && outcome.reason !== undefined) {
          report(outcome.reason)
        }
        return outcome
      })
      inFlight.set(cacheKey, pending)
    }
    return pending
  }

  return {
    enabled: true,
    authenticate: (headers) =>
      Effect.clockWith((clock) => {
        const credentials = platformCredentials(headers, settings)
        if (Result.isFailure(credentials)) return Effect.fail(credentials.failure)
        const { key, projectId } = credentials.success
        const cacheKey = `${fingerprint(key)}\u0000${projectId}`
        const cached = cache.get(cacheKey)
        if (cached !== undefined) {
          if (cached.validUntil > clock.currentTimeMillisUnsafe()) return Effect.succeed(cached.token)
          cache.delete(cacheKey)
        }
        return Effect.flatMap(
          Effect.promise(() => shared(cacheKey, key, projectId, clock)),
          (outcome) => (outcome._tag === "Token" ? Effect.succeed(outcome.token) : Effect.fail(outcome.error))
        )
      })
  }
}

const DISABLED: PlatformAuthShape = { enabled: false, authenticate: () => Effect.succeed(undefined) }

export class PlatformAuth extends Context.Service<PlatformAuth, PlatformAuthShape>()("gateway/tenancy/PlatformAuth") {
  /** The exchange at `exchange_url` when `[auth] enabled`; otherwise every request passes with no token. */
  static readonly layer = (settings: ConfigFile["auth"]): Layer.Layer<PlatformAuth, never, Log> =>
    Layer.effect(
      PlatformAuth,
      Effect.gen(function*() {
        if (!settings.enabled || settings.exchange_url === undefined) return DISABLED
        const log = yield* Log
        const pool = yield* Effect.acquireRelease(
          Effect.sync(() => new Pool(new URL(settings.exchange_url!).origin, { connections: 16, keepAliveTimeout: 30_000 })),
          (pool) => Effect.promise(() => pool.destroy().catch(() => undefined))
        )
        return makeLive(settings, log, pool)
      })
    )

  /**
   * No exchange: `keys` maps each platform key to the projects it may use.
   * An unknown key is a 401, a known key on another project a 403, else the
   * token `token-<project>` that expires in an hour.
   */
  static readonly layerTest = (settings: ConfigFile["auth"], keys: Readonly<Record<string, ReadonlyArray<string>>>): Layer.Layer<PlatformAuth> =>
    Layer.succeed(PlatformAuth, {
      enabled: true,
      authenticate: (headers) =>
        Effect.suspend(() => {
          const credentials = platformCredentials(headers, settings)
          if (Result.isFailure(credentials)) return Effect.fail(credentials.failure)
          const { key, projectId } = credentials.success
          const projects = keys[key]
          if (projects === undefined) return Effect.fail(denied("auth", "the platform credential was rejected"))
          if (!projects.includes(projectId)) return Effect.fail(denied("forbidden", "the platform credential is not permitted for this project"))
          const token = `token-${projectId}`
          return Effect.succeed({ token: Redacted.make(token), fingerprint: fingerprint(token), expiresAt: Date.now() + 3_600_000, projectId })
        })
    })
}
