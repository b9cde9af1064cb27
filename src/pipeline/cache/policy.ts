/**
 * Whether a request uses the cache, and for how long an answer is kept: the
 * project's `default_mode`, which `x-gw-cache: auto|always|never` overrides per
 * request, and `ttl_seconds`, which `x-gw-cache-ttl: <seconds>` overrides up
 * to `max_ttl_seconds`.
 *
 * `auto` caches what is deterministic: embeddings always; chat only when
 * `temperature` is 0 or a `seed` is set.
 */
import { Result } from "effect"
import type { ConfigFile } from "../../config/index.ts"
import { clip, GatewayError } from "../../domain/index.ts"

export type CacheSection = ConfigFile["cache"]

export interface CacheUse {
  readonly ttlSeconds: number
  /** The mode that applied (`auto`, `always`): the header's, else `default_mode`. */
  readonly mode: string
}

const MODES = new Set(["auto", "always", "never"])

const invalid = (header: string, value: string, expected: string) =>
  Result.fail(new GatewayError({ status: 400, code: "invalid_request", message: `${header} must be ${expected}; got "${clip(value, 64)}"` }))

/** Shared: a request that skips the cache (the common case when it is on) allocates nothing. */
const NOT_CACHED: Result.Result<CacheUse | undefined, GatewayError> = Result.succeed(undefined)

/** How this request uses the cache (undefined: not at all), or the 400 for a malformed header. */
export const cacheUse = (
  section: CacheSection,
  endpoint: "chat" | "embeddings",
  json: Readonly<Record<string, unknown>>,
  modeHeader: string | undefined,
  ttlHeader: string | undefined
): Result.Result<CacheUse | undefined, GatewayError> => {
  const mode = modeHeader?.trim().toLowerCase() ?? section.default_mode
  if (!MODES.has(mode)) return invalid("x-gw-cache", modeHeader ?? "", "auto, always or never")
  let ttlSeconds = section.ttl_seconds
  if (ttlHeader !== undefined) {
    const value = ttlHeader.trim()
    if (!/^\d{1,10}$/.test(value) || Number(value) === 0) return invalid("x-gw-cache-ttl", ttlHeader, "a whole number of seconds above 0")
    ttlSeconds = Number(value)
  }
  ttlSeconds = Math.min(ttlSeconds, section.max_ttl_seconds)
  if (mode === "never") return NOT_CACHED
  if (mode === "auto" && endpoint === "chat" && json.temperature !== 0 && json.seed == null) return NOT_CACHED
  return Result.succeed({ ttlSeconds, mode })
}
