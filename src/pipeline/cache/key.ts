/**
 * The cache key of a request (docs/reference/DESIGN.md "Cache"): SHA-256 over
 * the project, a fingerprint of the credential the request runs with, the
 * resolved plan (with an experiment's variant and its parameters), the
 * caller's format, and the request body without `stream`, `stream_options`
 * and `user`, serialized with sorted keys so key order does not matter.
 *
 * Two callers with different keys never share an entry; callers of one
 * configured credential do. A streaming and a non-streaming request for the
 * same thing share one (a stream is stored as its final answer).
 */
import { hash } from "node:crypto"
import type { FingerprintedCredential } from "../../config/index.ts"

export interface CacheKeyParts {
  readonly projectId: string
  readonly credential: FingerprintedCredential
  /** `route::smart`, `openai::gpt-4o`; with a variant: `function::f#variant`. */
  readonly plan: string
  readonly overrides?: Readonly<Record<string, unknown>> | undefined
  /** The caller's format, or the endpoint for non-chat requests. */
  readonly format: string
  readonly body: Readonly<Record<string, unknown>>
}

/** Fields that change how an answer is delivered, not what it is. */
const DELIVERY_FIELDS = new Set(["stream", "stream_options", "user"])

/** JSON with object keys sorted at every level. */
export const canonicalJson = (value: unknown): string => canonicalOf(value, undefined)

/** `canonicalJson`, leaving out the object's own keys in `without` (one level). */
const canonicalOf = (value: unknown, without: ReadonlySet<string> | undefined): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) out += i === 0 ? canonicalJson(value[i]) : `,${canonicalJson(value[i])}`
    return `${out}]`
  }
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).sort()
  let out = "{"
  for (const key of keys) {
    const field = record[key]
    if (field === undefined || without?.has(key) === true) continue
    out += `${out.length === 1 ? "" : ","}${JSON.stringify(key)}:${canonicalJson(field)}`
  }
  return `${out}}`
}

/** A credential's fingerprint (its SHA-256, computed when it was read), never the credential itself. */
export const credentialFingerprint = (credential: FingerprintedCredential): string => credential.fingerprint ?? "none"

/** The request's cache key: 64 hex characters (one SHA-256 over one string, no hash object). */
export const cacheKey = (parts: CacheKeyParts): string =>
  hash(
    "sha256",
    `gateway-cache/v1\n${parts.projectId}\n${credentialFingerprint(parts.credential)}\n${parts.plan}\n${canonicalJson(parts.overrides ?? {})}\n${parts.format}\n${canonicalOf(parts.body, DELIVERY_FIELDS)}`,
    "hex"
  )
