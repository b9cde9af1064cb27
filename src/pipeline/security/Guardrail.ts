/**
 * The inline security stage (`[security]`): PII detection and the blocklist on
 * every request's text before anything reaches a provider, and, with
 * `output_guardrails`, on the answer's text.
 *
 * A project's `[security]` section compiles once (per configuration version)
 * into a `GuardPolicy`; requests only run it. A disabled section compiles to a
 * policy whose checks return at once.
 */
import { Context, Layer } from "effect"
import type { ConfigFile } from "../../config/index.ts"
import { GatewayError } from "../../domain/index.ts"
import { compileBlocklist } from "./blocklist.ts"
import { findPii, PII_DESCRIPTIONS } from "./pii.ts"
import type { PiiCategory } from "./pii.ts"
import { visitText } from "./surfaces.ts"
import type { Surface } from "./surfaces.ts"

export type SecuritySection = ConfigFile["security"]

/** What was found: a PII category, or a blocklisted term (never which one). */
export type Violation = PiiCategory | "blocklist"

export interface GuardPolicy {
  /** Input scanning is on (`[security] enabled`). */
  readonly enabled: boolean
  /** Response text is scanned too (`output_guardrails`, with `enabled`). */
  readonly output: boolean
  /** The first violation in a request body's text, or undefined. */
  readonly scanRequest: (surface: Surface, json: Readonly<Record<string, unknown>>) => Violation | undefined
  /** The first violation in a piece of text, or undefined. */
  readonly scanText: (text: string) => Violation | undefined
}

const OFF: GuardPolicy = { enabled: false, output: false, scanRequest: () => undefined, scanText: () => undefined }

/** An enabled policy: `scanText` on a piece of text, and on every text piece of a request until one violates. */
const enabledPolicy = (output: boolean, scanText: (text: string) => Violation | undefined): GuardPolicy => ({
  enabled: true,
  output,
  scanText,
  scanRequest: (surface, json) => {
    let found: Violation | undefined
    visitText(surface, json, (text) => {
      found = scanText(text)
      return found !== undefined
    })
    return found
  }
})

/** Compiles a `[security]` section: the blocklist automaton is built here, once. */
export const compileGuardPolicy = (section: SecuritySection): GuardPolicy => {
  if (!section.enabled) return OFF
  const blocklist = compileBlocklist(section.blocklist)
  return enabledPolicy(section.output_guardrails, (text) => findPii(text) ?? (blocklist.matches(text) ? "blocklist" : undefined))
}

const describe = (violation: Violation): string => (violation === "blocklist" ? "a blocklisted term" : PII_DESCRIPTIONS[violation])

/** The 400 of an input violation: names the category, never the text or the term. */
export const inputViolationError = (violation: Violation): GatewayError =>
  new GatewayError({
    status: 400,
    code: violation === "blocklist" ? "blocklist_match" : "pii_detected",
    message: `the request contains ${describe(violation)}, which this gateway does not send to model providers`
  })

/** The 422 of a non-streamed answer that failed the output guardrail: the answer is withheld. */
export const outputViolationError = (violation: Violation): GatewayError =>
  new GatewayError({
    status: 422,
    code: "output_guardrail_violation",
    message: `the model's answer contained ${describe(violation)} and was withheld`
  })

/** A scan the test layer recorded: the text looked at, and what was found in it. */
export interface RecordedScan {
  readonly text: string
  readonly found: Violation | undefined
}

export class Guardrail extends Context.Service<Guardrail, {
  /** Compiles a project's `[security]` section into the policy its requests run. */
  readonly compile: (section: SecuritySection) => GuardPolicy
}>()("gateway/pipeline/security/Guardrail") {
  static readonly layer: Layer.Layer<Guardrail> = Layer.succeed(Guardrail, Guardrail.of({ compile: compileGuardPolicy }))

  /**
   * The same scanners, recording every piece of text they look at (and what
   * they found) in `scans`, so a test can see what was scanned and what not.
   */
  static readonly layerTest = (scans: Array<RecordedScan>): Layer.Layer<Guardrail> =>
    Layer.succeed(
      Guardrail,
      Guardrail.of({
        compile: (section) => {
          const policy = compileGuardPolicy(section)
          if (!policy.enabled) return policy
          return enabledPolicy(policy.output, (text) => {
            const found = policy.scanText(text)
            scans.push({ text, found })
            return found
          })
        }
      })
    )
}
