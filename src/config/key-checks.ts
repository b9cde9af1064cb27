/**
 * The `[keys]` and `[limits]` sections checked and resolved: each gateway
 * key's `env::VAR` read from the environment and kept as its SHA-256 only,
 * its globs and limits checked, the limits store's URL settled.
 *
 * Details
 * - A key must be `env::VAR` with the variable set: a key nobody can present
 *   would leave its name looking configured while nothing can use it.
 * - Two names with the same key are refused: the gateway could not tell which
 *   one called.
 * - `[keys]` and `[auth]` both read `x-gw-authorization`: both on is refused.
 * - Messages never carry a key, only the variable's name.
 */
import { hash } from "node:crypto"
import { parseCredentialLocation } from "./credentials.ts"
import type { ResolvedKey } from "./resolved.ts"
import type { CallerLimits, ConfigFile, GatewayKey } from "./schema.ts"

type Env = Readonly<Record<string, string | undefined>>

interface Findings {
  error(path: string, message: string): void
  warn(path: string, message: string): void
}

/** SHA-256 of a presented or configured key (hex): what keys are stored and compared as. */
export const keyDigest = (key: string): string => hash("sha256", key, "hex")

/** Globs allow `*` alone as a wildcard; anything else in them is literal. */
const GLOB_CHARACTERS = /[?[\]{}]/

const checkGlobs = (path: string, globs: ReadonlyArray<string> | undefined, findings: Findings) => {
  globs?.forEach((glob, index) => {
    if (GLOB_CHARACTERS.test(glob)) findings.warn(`${path}[${index}]`, `only "*" is a wildcard; ${JSON.stringify(glob)} is matched literally otherwise`)
  })
}

/** The limit fields of a key or project, as they are counted. */
export const limitsOf = (source: CallerLimits): CallerLimits => {
  const limits: { -readonly [K in keyof CallerLimits]: CallerLimits[K] } = {}
  if (source.requests_per_minute !== undefined) limits.requests_per_minute = source.requests_per_minute
  if (source.tokens_per_minute !== undefined) limits.tokens_per_minute = source.tokens_per_minute
  if (source.concurrent_requests !== undefined) limits.concurrent_requests = source.concurrent_requests
  if (source.budget_usd_per_day !== undefined) limits.budget_usd_per_day = source.budget_usd_per_day
  if (source.budget_usd_per_month !== undefined) limits.budget_usd_per_month = source.budget_usd_per_month
  return limits
}

const resolveKey = (name: string, entry: GatewayKey, env: Env, findings: Findings): ResolvedKey | undefined => {
  const path = `keys.${name}`
  checkGlobs(`${path}.models`, entry.models, findings)
  checkGlobs(`${path}.routes`, entry.routes, findings)
  checkGlobs(`${path}.functions`, entry.functions, findings)
  const location = parseCredentialLocation(entry.key)
  if (location === undefined || location.kind !== "env") {
    findings.error(`${path}.key`, `expected "env::<VARIABLE>", got ${JSON.stringify(entry.key.startsWith("env::") || entry.key === "none" ? entry.key : "<redacted literal>")} (keys never belong in the file)`)
    return undefined
  }
  const value = env[location.variable]
  if (value === undefined || value === "") {
    findings.error(`${path}.key`, `env::${location.variable} is not set; a gateway key needs a value`)
    return undefined
  }
  return {
    name,
    digest: keyDigest(value),
    projectId: entry.project_id,
    models: entry.models,
    routes: entry.routes,
    functions: entry.functions,
    limits: limitsOf(entry)
  }
}

/** Resolves `[keys]`; refuses keys beside `[auth]`, shared keys, and a bad `[limits] url`. */
export const checkKeys = (file: ConfigFile, env: Env, findings: Findings, isRedisUrl: (url: string) => boolean): ReadonlyArray<ResolvedKey> => {
  const names = Object.keys(file.keys)
  if (names.length > 0 && file.auth.enabled) {
    findings.error("keys", "cannot be used with [auth] (auth.enabled = true): both read x-gw-authorization; configure [keys] or [auth], not both")
  }
  const keys: Array<ResolvedKey> = []
  const byDigest = new Map<string, string>()
  for (const name of names) {
    const key = resolveKey(name, file.keys[name], env, findings)
    if (key === undefined) continue
    const first = byDigest.get(key.digest)
    if (first !== undefined) {
      findings.error(`keys.${name}.key`, `the same key as keys.${first}; every name needs its own key`)
      continue
    }
    byDigest.set(key.digest, name)
    keys.push(key)
  }
  const url = file.limits.url
  if (url !== undefined && !isRedisUrl(url)) {
    // Not echoed: a Redis URL may carry a password.
    findings.error("limits.url", "expected a redis:// or rediss:// URL with a host, or a cluster's redis+cluster://host:port,host:port")
  }
  return keys
}
