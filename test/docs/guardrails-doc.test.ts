/**
 * docs/guardrails.md stays true: every example in its category tables is
 * found as that category ("matches") or not found at all ("passes").
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { findPii } from "../../src/pipeline/security/pii.ts"
import type { PiiCategory } from "../../src/pipeline/security/pii.ts"
import { PROJECT_ROOT } from "../cli/process.ts"

const HEADINGS: Readonly<Record<string, PiiCategory>> = {
  "Secret key": "secret_key",
  "Payment card": "payment_card",
  "US social security number": "us_ssn",
  IBAN: "iban",
  "Email address": "email",
  "Phone number": "phone",
  "IPv4 address": "ipv4"
}

const doc = readFileSync(join(PROJECT_ROOT, "docs", "guardrails.md"), "utf8")

const examples = (heading: string) => {
  const section = doc.split(`### ${heading}\n`)[1].split("\n#")[0]
  const rows = section.split("\n").filter((line) => line.startsWith("| `"))
  const cell = (text: string) => /`([^`]*)`/.exec(text)?.[1]
  return rows.map((row) => {
    const [, match, pass] = row.split("|")
    return { match: cell(match), pass: cell(pass) }
  })
}

describe("docs/guardrails.md examples", () => {
  for (const [heading, category] of Object.entries(HEADINGS)) {
    it(`${heading}: the examples behave as the table says`, () => {
      const rows = examples(heading)
      expect(rows.length).toBeGreaterThanOrEqual(3)
      for (const { match, pass } of rows) {
        if (match !== undefined) expect([match, findPii(match)]).toEqual([match, category])
        if (pass !== undefined) expect([pass, findPii(pass)]).toEqual([pass, undefined])
      }
    })
  }
})
