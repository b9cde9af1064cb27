/**
 * A stored snapshot (as Redis or the fallback API hold it) to a validated
 * snapshot: JSON, then the envelope opened with the gateway's key when one is
 * configured, then the rules of the configuration file. Every refusal says
 * why without quoting the snapshot: a JSON parser's message can contain a
 * piece of the text, a validation message can quote a value, and the text
 * holds keys. Validation failures are reported by key path only.
 */
import type { KeyObject } from "node:crypto"
import { snapshotFromDocument } from "../config/index.ts"
import type { ConfigFile, ValidatedSnapshot } from "../config/index.ts"
import { isEnvelope, open } from "./sealing.ts"

/** Larger stored values are refused before parsing. */
export const MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024

export type Opened =
  | { readonly ok: true; readonly snapshot: ValidatedSnapshot }
  | { readonly ok: false; readonly reason: string }

/** JSON.parse, with a failure described by position only. */
export const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (cause) {
    const at = /position \d+(?: \(line \d+ column \d+\))?/.exec(String((cause as Error).message))
    return { ok: false, reason: `not valid JSON${at === null ? "" : ` (at ${at[0]})`}` }
  }
}

/**
 * Opens and validates a stored snapshot. With `privateKey` only an envelope is
 * accepted; without one only plaintext JSON (development only).
 */
export const openSnapshot = (
  raw: string,
  privateKey: KeyObject | undefined,
  source: string,
  gateway?: ConfigFile
): Opened => {
  if (raw.length > MAX_SNAPSHOT_BYTES) return { ok: false, reason: `larger than ${MAX_SNAPSHOT_BYTES} bytes` }
  const outer = parseJson(raw)
  if (!outer.ok) return outer
  let document = outer.value
  if (isEnvelope(document)) {
    if (privateKey === undefined) {
      return { ok: false, reason: "sealed snapshot, but tenant_routing.private_key_path is not set" }
    }
    const opened = open(document, privateKey)
    if (!opened.ok) return { ok: false, reason: `cannot decrypt: ${opened.reason}` }
    const inner = parseJson(opened.plaintext)
    if (!inner.ok) return { ok: false, reason: `decrypted payload is ${inner.reason}` }
    document = inner.value
  } else if (privateKey !== undefined) {
    return { ok: false, reason: "plaintext snapshot refused: tenant_routing.private_key_path is set, so snapshots must be sealed" }
  }
  const validated = snapshotFromDocument(document, source, gateway)
  if (validated.ok) return validated
  return {
    ok: false,
    reason: `does not validate (problems at ${validated.problems.join(", ")}); \`gateway snapshot seal\` on its plaintext shows the messages`
  }
}
