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
import { createHash } from "node:crypto"
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
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`
}

/** A credential's fingerprint (its SHA-256, computed when it was read), never the credential itself. */
export const credentialFingerprint = (credential: FingerprintedCredential): string => credential.fingerprint ?? "none"

/** The request's cache key: 64 hex characters. */
export const cacheKey = (parts: CacheKeyParts): string => {
  const body: Record<string, unknown> = {}
  for (const key of Object.keys(parts.body)) if (!DELIVERY_FIELDS.has(key)) body[key] = parts.body[key]
  return createHash("sha256")
    .update(`gateway-cache/v1\n${parts.projectId}\n${credentialFingerprint(parts.credential)}\n${parts.plan}\n`)
    .update(`${canonicalJson(parts.overrides ?? {})}\n${parts.format}\n`)
    .update(canonicalJson(body))
    .digest("hex")
}
