/**
 * Credential locations (docs/reference/gateway-spec.md §2.7, 5): `env::VAR`, `none`, or omitted (the
 * provider's convention variable, docs/reference/DESIGN.md). Resolved once at start; values
 * are held as `Redacted` so they never print. A tenant snapshot carries its
 * keys in the snapshot itself (`inline`) and never reads the environment.
 */
import { Redacted } from "effect"
import { hash } from "node:crypto"

export type CredentialLocation =
  | { readonly kind: "env"; readonly variable: string; readonly convention: boolean }
  | { readonly kind: "none" }
  /** The key travels inside a tenant snapshot (multi-tenant mode). */
  | { readonly kind: "inline" }

const ENV_PREFIX = "env::"
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Parses a `credential` value; undefined means the value is not a valid location. */
export const parseCredentialLocation = (value: string): CredentialLocation | undefined => {
  if (value === "none") return { kind: "none" }
  if (value.startsWith(ENV_PREFIX)) {
    const variable = value.slice(ENV_PREFIX.length)
    return VARIABLE.test(variable) ? { kind: "env", variable, convention: false } : undefined
  }
  return undefined
}

/**
 * A key with its fingerprint (SHA-256, hex): what per-credential state (the
 * response cache's keys and seals) is keyed by, never the key itself. A
 * configured credential is fingerprinted once, when the configuration loads.
 */
export interface FingerprintedCredential {
  /** Undefined for `none` and for an unset variable (the caller may bring its own key). */
  readonly value: Redacted.Redacted<string> | undefined
  /** Undefined exactly when `value` is. */
  readonly fingerprint: string | undefined
}

const NOT_FINGERPRINTED: FingerprintedCredential = { value: undefined, fingerprint: undefined }

/** Each key's fingerprint, made once per key object (a caller's recent key is one object, request after request). */
const fingerprints = new WeakMap<Redacted.Redacted<string>, FingerprintedCredential>()

export const fingerprinted = (value: Redacted.Redacted<string> | undefined): FingerprintedCredential => {
  if (value === undefined) return NOT_FINGERPRINTED
  let known = fingerprints.get(value)
  if (known === undefined) {
    known = { value, fingerprint: hash("sha256", Redacted.value(value), "hex") }
    fingerprints.set(value, known)
  }
  return known
}

export interface ResolvedCredential extends FingerprintedCredential {
  readonly location: CredentialLocation
}

/** No credential (`none`, or a snapshot provider without one): callers bring their own key. */
export const NO_CREDENTIAL: ResolvedCredential = { location: { kind: "none" }, value: undefined, fingerprint: undefined }

export const resolveCredential = (
  location: CredentialLocation,
  env: Readonly<Record<string, string | undefined>>
): ResolvedCredential => {
  if (location.kind !== "env") return { location, value: undefined, fingerprint: undefined }
  const value = env[location.variable]
  return { location, ...fingerprinted(value === undefined || value === "" ? undefined : Redacted.make(value)) }
}

/** How `check-config` shows a credential: where it comes from and whether it is set, never its value. */
export const describeCredential = (credential: ResolvedCredential): string => {
  const { location } = credential
  if (location.kind === "none") return "none"
  if (location.kind === "inline") return `inline ${credential.value === undefined ? "[unset]" : "[set, redacted]"}`
  const origin = location.convention ? " (convention)" : ""
  return `env::${location.variable}${origin} ${credential.value === undefined ? "[unset]" : "[set, redacted]"}`
}
