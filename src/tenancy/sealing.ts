/**
 * Sealed snapshots: the envelope
 * `{"v":1,"alg":"X25519-HKDF-SHA256-AES256GCM","epk":b64,"nonce":b64,"ct":b64}`.
 * The publisher draws an ephemeral X25519 key pair; the shared secret with the
 * gateway's public key goes through HKDF-SHA256 (empty salt, info
 * `gateway-snapshot/v1`, 32 bytes) to an AES-256-GCM key; `ct` is the
 * ciphertext of the snapshot JSON with the 16-byte tag at its end.
 *
 * Sealing gives confidentiality, not authenticity: anyone with the public key
 * can seal a snapshot, so write access to the store must stay restricted.
 * Keys are 32 raw bytes, in files as those bytes or their base64.
 */
import { Result } from "effect"
import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes } from "node:crypto"
import type { KeyObject } from "node:crypto"
import { readFileSync, statSync } from "node:fs"

const ENVELOPE_ALG = "X25519-HKDF-SHA256-AES256GCM"
const HKDF_INFO = Buffer.from("gateway-snapshot/v1")
const KEY_BYTES = 32
const NONCE_BYTES = 12
const TAG_BYTES = 16
// DER headers of an X25519 key in PKCS#8 (private) and SPKI (public) form, followed by the 32 raw bytes.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b656e04220420", "hex")
const SPKI_PREFIX = Buffer.from("302a300506032b656e032100", "hex")
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/

export interface Envelope {
  readonly v: 1
  readonly alg: typeof ENVELOPE_ALG
  readonly epk: string
  readonly nonce: string
  readonly ct: string
}

export const privateKeyFromBytes = (raw: Uint8Array): KeyObject =>
  createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: "der", type: "pkcs8" })

export const publicKeyFromBytes = (raw: Uint8Array): KeyObject =>
  createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" })

const rawPublic = (key: KeyObject): Buffer => key.export({ format: "der", type: "spki" }).subarray(SPKI_PREFIX.length)

/** A fresh key pair as 32 raw bytes each. */
export const generateKeyPair = (): { readonly privateKey: Buffer; readonly publicKey: Buffer } => {
  const pair = generateKeyPairSync("x25519")
  return {
    privateKey: pair.privateKey.export({ format: "der", type: "pkcs8" }).subarray(PKCS8_PREFIX.length),
    publicKey: rawPublic(pair.publicKey)
  }
}

/** 32 raw bytes, or their base64 (surrounding whitespace ignored); undefined otherwise. */
export const keyBytes = (content: Uint8Array): Buffer | undefined => {
  if (content.byteLength === KEY_BYTES) return Buffer.from(content)
  const text = Buffer.from(content).toString("utf8").trim()
  if (!BASE64.test(text)) return undefined
  const decoded = Buffer.from(text, "base64")
  return decoded.byteLength === KEY_BYTES ? decoded : undefined
}

/**
 * The gateway's private key from `private_key_path`. A file that group or
 * others may access is still used, with a warning to tighten it.
 */
export const readPrivateKeyFile = (
  path: string
): Result.Result<{ readonly key: KeyObject; readonly warnings: ReadonlyArray<string> }, string> => {
  let content: Buffer
  let mode: number
  try {
    content = readFileSync(path)
    mode = statSync(path).mode
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code
    return Result.fail(`tenant_routing.private_key_path: cannot read ${path} (${code ?? "error"})`)
  }
  const raw = keyBytes(content)
  if (raw === undefined) {
    return Result.fail(`tenant_routing.private_key_path: ${path} does not hold a 32-byte X25519 key (raw or base64)`)
  }
  const warnings = (mode & 0o077) === 0
    ? []
    : [`tenant_routing.private_key_path: ${path} is accessible by group or others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`]
  return Result.succeed({ key: privateKeyFromBytes(raw), warnings })
}

const deriveKey = (privateKey: KeyObject, publicKey: KeyObject): Buffer =>
  Buffer.from(hkdfSync("sha256", diffieHellman({ privateKey, publicKey }), Buffer.alloc(0), HKDF_INFO, KEY_BYTES))

/** Seals `plaintext` (the snapshot JSON) for the holder of `recipient`'s private key. */
export const seal = (plaintext: string, recipient: KeyObject): Envelope => {
  const ephemeral = generateKeyPairSync("x25519")
  const nonce = randomBytes(NONCE_BYTES)
  const cipher = createCipheriv("aes-256-gcm", deriveKey(ephemeral.privateKey, recipient), nonce)
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()])
  return {
    v: 1,
    alg: ENVELOPE_ALG,
    epk: rawPublic(ephemeral.publicKey).toString("base64"),
    nonce: nonce.toString("base64"),
    ct: ct.toString("base64")
  }
}

/** Whether a parsed document is an envelope (rather than a plaintext snapshot). */
export const isEnvelope = (document: unknown): boolean =>
  typeof document === "object" && document !== null && "ct" in document && "alg" in document

const base64Field = (value: unknown, bytes?: number): Buffer | undefined => {
  if (typeof value !== "string" || !BASE64.test(value)) return undefined
  const decoded = Buffer.from(value, "base64")
  return bytes === undefined || decoded.byteLength === bytes ? decoded : undefined
}

/**
 * Opens an envelope with the gateway's private key: the snapshot JSON, or why
 * not (the reason names no key material).
 */
export const open = (document: unknown, privateKey: KeyObject): Result.Result<string, string> => {
  const envelope = document as Record<string, unknown>
  if (envelope.v !== 1 || envelope.alg !== ENVELOPE_ALG) {
    return Result.fail(`unsupported envelope (v ${JSON.stringify(envelope.v)}, alg ${JSON.stringify(envelope.alg)})`)
  }
  const epk = base64Field(envelope.epk, KEY_BYTES)
  const nonce = base64Field(envelope.nonce, NONCE_BYTES)
  const ct = base64Field(envelope.ct)
  if (epk === undefined || nonce === undefined || ct === undefined || ct.byteLength < TAG_BYTES) {
    return Result.fail("malformed envelope (epk, nonce or ct)")
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", deriveKey(privateKey, publicKeyFromBytes(epk)), nonce, { authTagLength: TAG_BYTES })
    decipher.setAuthTag(ct.subarray(ct.byteLength - TAG_BYTES))
    const plaintext = Buffer.concat([decipher.update(ct.subarray(0, ct.byteLength - TAG_BYTES)), decipher.final()])
    return Result.succeed(plaintext.toString("utf8"))
  } catch {
    // A wrong key and a tampered byte look the same to GCM, on purpose.
    return Result.fail("authentication failed (tampered, or sealed for another key)")
  }
}
