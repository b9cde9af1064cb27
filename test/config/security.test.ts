/** The `[security]` section at start: empty terms stop it, duplicates warn, terms are never printed. */
import { describe, expect, it } from "vitest"
import { redactedView } from "../../src/config/index.ts"
import { failure, INVALID, load, warningsOf, withServer } from "./support.ts"

describe("[security]", () => {
  it("an empty or blank blocklist term stops the start (it would match every request)", () => {
    expect(failure(withServer({ security: { enabled: true, blocklist: ["ok", ""] } }))).toBe(
      `${INVALID}security.blocklist[1]: an empty or blank term would match every request; remove it`
    )
    expect(failure(withServer({ security: { blocklist: ["  "] } }))).toContain("security.blocklist[0]: an empty or blank term")
  })

  it("a term given twice, ignoring case, is a warning that names positions, not terms", () => {
    const warnings = warningsOf(withServer({ security: { enabled: true, blocklist: ["Secret Plan", "other", "SECRET plan"] } }))
    expect(warnings).toEqual(["security.blocklist[2]: the same term as security.blocklist[0] (case is ignored); it has no effect"])
    expect(JSON.stringify(warnings).toLowerCase()).not.toContain("secret plan")
  })

  it("a term given twice under Unicode case folding (Straße and STRASSE) is the same term, as matching reads it", () => {
    const warnings = warningsOf(withServer({ security: { enabled: true, blocklist: ["Straße", "STRASSE", "straẞe"] } }))
    expect(warnings).toEqual([
      "security.blocklist[1]: the same term as security.blocklist[0] (case is ignored); it has no effect",
      "security.blocklist[2]: the same term as security.blocklist[0] (case is ignored); it has no effect"
    ])
  })

  it("output_guardrails without enabled warns that it has no effect", () => {
    expect(warningsOf(withServer({ security: { output_guardrails: true } }))).toEqual([
      "security.output_guardrails: has no effect while security.enabled = false"
    ])
  })

  it("check-config's view shows how many terms there are, never the terms", () => {
    const view = redactedView(load(withServer({ security: { enabled: true, blocklist: ["alpha secret", "beta secret"] } }))) as { security: { blocklist: unknown } }
    expect(view.security.blocklist).toBe("[2 terms, not shown]")
    expect(JSON.stringify(view)).not.toContain("alpha secret")
  })
})
