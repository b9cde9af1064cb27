/**
 * A stored snapshot (as Redis or the fallback API hold it) to a validated
 * snapshot: JSON, then the envelope opened with the gateway's key when one is
 * configured, then the rules of the configuration file. Every refusal says
 * why without quoting the snapshot: a JSON parser's message can contain a
 * piece of the text, a validation message can quote a value, and the text
 * holds keys. Validation failures are reported by key path only.
 */
import { Result } from "effect"
import type { KeyObject } from "node:crypto"
import { snapshotFromDocument } from "../config/index.ts"
import type { ConfigFile, ValidatedSnapshot } from "../config/index.ts"
import { isEnvelope, open } from "./sealing.ts"

/** Larger stored values are refused before parsing. */
export const MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024

/** A validated snapshot, or why it was refused (a reason that quotes nothing from it). */
export type Opened = Result.Result<ValidatedSnapshot, string>

/** JSON.parse, with a failure described by position only. */
export const parseJson = (text: string): Result.Result<unknown, string> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch (cause) {
    const at = /position \d+(?: \(line \d+ column \d+\))?/.exec(String((cause as Error).message))
    return Result.fail(`not valid JSON${at === null ? "" : ` (at ${at[0]})`}`)
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
  if (raw.length > MAX_SNAPSHOT_BYTES) return Result.fail(`larger than ${MAX_SNAPSHOT_BYTES} bytes`)
  const outer = parseJson(raw)
  if (Result.isFailure(outer)) return Result.fail(outer.failure)
  let document = outer.success
  if (isEnvelope(document)) {
    if (privateKey === undefined) return Result.fail("sealed snapshot, but tenant_routing.private_key_path is not set")
    const opened = open(document, privateKey)
    if (Result.isFailure(opened)) return Result.fail(`cannot decrypt: ${opened.failure}`)
    const inner = parseJson(opened.success)
    if (Result.isFailure(inner)) return Result.fail(`decrypted payload is ${inner.failure}`)
    document = inner.success
  } else if (privateKey !== undefined) {
    return Result.fail("plaintext snapshot refused: tenant_routing.private_key_path is set, so snapshots must be sealed")
  }
  return Result.mapError(
    snapshotFromDocument(document, source, gateway),
    (refusal) => `does not validate (problems at ${refusal.problems.join(", ")}); \`gateway snapshot seal\` on its plaintext shows the messages`
  )
}
