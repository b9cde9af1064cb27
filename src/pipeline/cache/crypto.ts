/**
 * Encryption at rest (`[cache] encrypt`, on by default): AES-256-GCM with a
 * fresh 12-byte nonce per entry, the key derived with HKDF-SHA256 from the
 * request's credential (salt `encrypt_salt`, info
 * `gateway-cache/v1|<project id>`). A copy of the store reveals no prompt and
 * no answer, and an entry written under one credential cannot be read with
 * another. The cache key the value is stored under is bound in as GCM
 * additional data, so a value moved to another key (by anyone who can write
 * to the store) does not open there: one answer cannot be made to serve
 * another request.
 *
 * Derived keys are kept in a small LRU keyed by a fingerprint of the
 * credential (never the credential), so HKDF runs once per credential, not
 * per request. A request without any credential derives its key from the
 * salt alone.
 */
import { Redacted } from "effect"
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomFillSync } from "node:crypto"
import type { KeyObject } from "node:crypto"
import type { FingerprintedCredential } from "../../config/index.ts"
import { credentialFingerprint } from "./key.ts"

/** The first byte of a stored value (1 was a sealed value without the key bound in; it no longer opens). */
const SEALED = 2
const PLAIN = 0
const NONCE = 12
const TAG = 16

const MAX_KEYS = 1024
/** Key objects, not raw bytes: a cipher made from bytes builds a key object each time. */
const derived = new Map<string, KeyObject>()

/** The key last handed out, already the most recently used: a request's seals (an answer and its items) reuse it untouched. */
let last: { readonly id: string; readonly key: KeyObject } | undefined

const keyFor = (credential: FingerprintedCredential, salt: string, projectId: string): KeyObject => {
  const id = `${credentialFingerprint(credential)}\n${salt}\n${projectId}`
  if (last?.id === id) return last.key
  const key = derivedKey(id, credential, salt, projectId)
  last = { id, key }
  return key
}

const derivedKey = (id: string, credential: FingerprintedCredential, salt: string, projectId: string): KeyObject => {
  const known = derived.get(id)
  if (known !== undefined) {
    // Most recently used last.
    derived.delete(id)
    derived.set(id, known)
    return known
  }
  const key = createSecretKey(Buffer.from(hkdfSync("sha256", credential.value === undefined ? "" : Redacted.value(credential.value), salt, `gateway-cache/v1|${projectId}`, 32)))
  derived.set(id, key)
  if (derived.size > MAX_KEYS) derived.delete(derived.keys().next().value!)
  return key
}

export interface SealOptions {
  readonly encrypt: boolean
  readonly salt: string
  readonly projectId: string
  readonly credential: FingerprintedCredential
  /** The cache key the value is stored under (bound into the seal). */
  readonly entryKey: string
}

/**
 * Nonces drawn from the CSPRNG a few hundred at a time (the same random bytes as one
 * `randomBytes(12)` each; a call into OpenSSL per seal cost a third of sealing a small entry).
 * Each nonce is handed out once.
 */
const NONCES_PER_DRAW = 256
const nonces = Buffer.alloc(NONCE * NONCES_PER_DRAW)
let noncesLeft = 0

/** A fresh nonce: valid until the next call (a cipher copies its IV). */
const nextNonce = (): Buffer => {
  if (noncesLeft === 0) {
    randomFillSync(nonces)
    noncesLeft = NONCES_PER_DRAW
  }
  noncesLeft--
  return nonces.subarray(noncesLeft * NONCE, (noncesLeft + 1) * NONCE)
}

/** The value to store: sealed (version, nonce, ciphertext, tag) or, with `encrypt = false`, marked plain. */
export const seal = (plaintext: Uint8Array, options: SealOptions): Buffer => {
  if (!options.encrypt) return Buffer.concat([Buffer.of(PLAIN), plaintext])
  const nonce = nextNonce()
  const cipher = createCipheriv("aes-256-gcm", keyFor(options.credential, options.salt, options.projectId), nonce)
  cipher.setAAD(Buffer.from(options.entryKey))
  const body = cipher.update(plaintext)
  cipher.final()
  return Buffer.concat([Buffer.of(SEALED), nonce, body, cipher.getAuthTag()])
}

/** The plaintext of a stored value, or undefined when it does not open (another credential or key, tampered, garbage). */
export const open = (stored: Uint8Array, options: SealOptions): Buffer | undefined => {
  const bytes = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength)
  if (bytes[0] === PLAIN) return options.encrypt ? undefined : bytes.subarray(1)
  if (bytes[0] !== SEALED || bytes.length < 1 + NONCE + TAG || !options.encrypt) return undefined
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyFor(options.credential, options.salt, options.projectId), bytes.subarray(1, 1 + NONCE))
    decipher.setAAD(Buffer.from(options.entryKey))
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG))
    return Buffer.concat([decipher.update(bytes.subarray(1 + NONCE, bytes.length - TAG)), decipher.final()])
  } catch {
    return undefined
  }
}
