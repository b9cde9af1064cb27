/**
 * PII detection (always on when `[security] enabled`): each category is a
 * pattern that finds candidates and a validator that keeps false positives
 * down. docs/guardrails.md lists what matches and what does not; a test runs
 * every example there.
 *
 * Cost: every pattern is linear, and a cheap prefilter (`indexOf`, one
 * character class test) skips a category when the text cannot hold it, so a
 * prompt without digits, `@` or key prefixes costs a few scans of its bytes.
 */

export const PII_CATEGORIES = ["secret_key", "payment_card", "us_ssn", "iban", "email", "phone", "ipv4"] as const

export type PiiCategory = typeof PII_CATEGORIES[number]

/** How a violation names the category to the caller (never the matched text). */
export const PII_DESCRIPTIONS: Readonly<Record<PiiCategory, string>> = {
  secret_key: "a secret key",
  payment_card: "a payment card number",
  us_ssn: "a US social security number",
  iban: "an IBAN",
  email: "an email address",
  phone: "a phone number",
  ipv4: "an IPv4 address"
}

// --- secret keys ---------------------------------------------------------------------

const PEM = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/
const AWS_KEY_ID = /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/
/** `sk-…` API keys (OpenAI `sk-`/`sk-proj-`, Anthropic `sk-ant-…`, Stripe-style `sk_live_`). */
const SK_KEY = /\bsk(?:-proj|-ant(?:-[a-z]+\d*)?|-svcacct|_live|_test)?[-_][A-Za-z0-9_-]{20,}/g
const SK_PREFIX = /^sk(?:-proj|-ant(?:-[a-z]+\d*)?|-svcacct|_live|_test)?[-_]/

/** A key-like token: long enough, with digits and letters mixed in (not a hyphenated phrase). */
const looksRandom = (token: string): boolean => {
  const body = token.replace(SK_PREFIX, "")
  if (body.length < 20) return false
  let digits = 0
  let upper = 0
  let runs = 0
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i)
    if (c >= 48 && c <= 57) digits++
    else if (c >= 65 && c <= 90) upper++
    else if (c === 45 || c === 95) runs++
  }
  // Words joined by hyphens ("sk-learn-is-a-machine-learning-library") have many separators and no digits.
  return digits >= 2 && (upper >= 2 || digits >= 6) && runs * 6 < body.length
}

const hasSecretKey = (text: string): boolean => {
  if (text.includes("-----BEGIN") && PEM.test(text)) return true
  if ((text.includes("AKIA") || text.includes("ASIA") || text.includes("ABIA") || text.includes("ACCA")) && AWS_KEY_ID.test(text)) return true
  if (!text.includes("sk")) return false
  SK_KEY.lastIndex = 0
  for (let match = SK_KEY.exec(text); match !== null; match = SK_KEY.exec(text)) {
    if (looksRandom(match[0])) return true
  }
  return false
}

// --- email ---------------------------------------------------------------------------

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}\b/g

const hasEmail = (text: string): boolean => {
  if (!text.includes("@")) return false
  EMAIL.lastIndex = 0
  for (let match = EMAIL.exec(text); match !== null; match = EMAIL.exec(text)) {
    const local = match[0].slice(0, match[0].indexOf("@"))
    // A local part cannot start or end with a dot nor hold two in a row.
    if (local !== "" && !local.startsWith(".") && !local.endsWith(".") && !local.includes("..")) return true
  }
  return false
}

// --- digit sequences: cards, SSNs, phones, IPv4 ----------------------------------------

/**
 * Candidate number-like spans: a digit (or `+`/`(` before one), then digits and
 * separators, ending on a digit. Each is classified below; the span must not
 * be glued to letters or further digits (a product code, a longer number).
 */
const NUMBERISH = /(?:\+|\(|\b)\d[\d .()/-]{4,28}\d\b/g

const NON_DIGITS = /\D/g

const digitsOf = (span: string): string => span.replace(NON_DIGITS, "")

const luhn = (digits: string): boolean => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** Issuer prefixes of the card networks (IIN ranges); a Luhn-valid number outside them is not taken for a card. */
const CARD_PREFIX = /^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35(?:2[89]|[3-8]\d)|5[06-9]|6[0-9])/

/** Digits in groups of 4 (Amex 4-6-5), separated by single spaces or dashes, or none. */
const CARD_SHAPE = /^\d{13,19}$|^\d{4}(?:([ -])\d{4}){2,3}(?:\1\d{1,4})?$|^\d{4}([ -])\d{6}\2\d{5}$/

const isCard = (span: string): boolean => {
  if (!CARD_SHAPE.test(span)) return false
  const digits = digitsOf(span)
  return digits.length >= 13 && digits.length <= 19 && CARD_PREFIX.test(digits) && luhn(digits)
}

const SSN_SHAPE = /^(\d{3})([- ])(\d{2})\2(\d{4})$/

const isSsn = (span: string): boolean => {
  const parts = SSN_SHAPE.exec(span)
  if (parts === null) return false
  const [, area, , group, serial] = parts
  return area !== "000" && area !== "666" && area[0] !== "9" && group !== "00" && serial !== "0000"
}

const IPV4_SHAPE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/
const DOT_DIGIT = /^\.\d/
const DIGIT_DOT = /\d\.$/
const VERSION_WORD = /(?:\bv|\bversion\s*|\bver\.?\s*|\brelease\s*)$/i

const isIpv4 = (span: string, before: string, after: string): boolean => {
  const parts = IPV4_SHAPE.exec(span)
  if (parts === null) return false
  for (let i = 1; i <= 4; i++) {
    const octet = parts[i]
    if (Number(octet) > 255 || (octet.length > 1 && octet[0] === "0")) return false
  }
  // Part of a longer dotted run (1.2.3.4.5), or a version (v1.2.3.4, "version 1.2.3.4").
  if (DOT_DIGIT.test(after) || DIGIT_DOT.test(before)) return false
  return !VERSION_WORD.test(before)
}

/**
 * Phone numbers: E.164 (`+` and 8–15 digits with a country code), and common
 * national forms: NANP (`(415) 555-0132`, `415-555-0132`, `415.555.0132`),
 * UK and German numbers starting with 0 grouped by spaces, French pairs
 * (`01 23 45 67 89`), Indian mobiles (`98765 43210`).
 */
const E164 = /^\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,6}$/
const NANP = /^(?:\(\d{3}\) ?|\d{3}([-.]))\d{3}([-.])\d{4}$/
const LEADING_ZERO = /^0\d{2,4}[ /-]\d{3,4}[ -]?\d{3,4}$/
const FRENCH = /^0[1-9](?: \d{2}){4}$|^0[1-9](?:\.\d{2}){4}$/
const INDIAN = /^[6-9]\d{4} \d{5}$/

const isPhone = (span: string): boolean => {
  const digits = digitsOf(span)
  if (span.startsWith("+")) return E164.test(span) && digits.length >= 8 && digits.length <= 15
  if (NANP.test(span)) {
    const area = digits[0]
    const exchange = digits[3]
    return area >= "2" && exchange >= "2"
  }
  if (FRENCH.test(span)) return true
  if (LEADING_ZERO.test(span)) return digits.length >= 10 && digits.length <= 12
  return INDIAN.test(span)
}

const LETTER_BEFORE = /[A-Za-z_]$/
const LETTER_AFTER = /^[A-Za-z_]/
const IBAN_HEAD_BEFORE = /[A-Z]{2}\d{2} ?$/

/** The first digit-based category the text holds, checked in the order of `PII_CATEGORIES`. */
const numericCategory = (text: string): PiiCategory | undefined => {
  let found: Array<PiiCategory> | undefined
  NUMBERISH.lastIndex = 0
  for (let match = NUMBERISH.exec(text); match !== null; match = NUMBERISH.exec(text)) {
    let span = match[0]
    // A span the pattern began on `(` without its `)` (or ended inside one) is trimmed to its digits.
    if (span.startsWith("(") && !span.includes(")")) span = span.slice(1)
    // Too few digits for any category (a card has 13, an SSN 9, a phone 8), unless it is dotted like an address.
    let digits = 0
    let dots = 0
    for (let i = 0; i < span.length; i++) {
      const c = span.charCodeAt(i)
      if (c >= 48 && c <= 57) digits++
      else if (c === 46) dots++
    }
    if (digits < 8 && dots !== 3) continue
    const start = match.index + (match[0].length - span.length)
    const before = text.slice(Math.max(0, start - 12), start)
    const after = text.slice(start + span.length, start + span.length + 2)
    // Glued to letters on either side (an order id like ORD-1234-5678, a hex string), or the body of an
    // IBAN (its country code and check digits just before): not a number of its own.
    if (LETTER_BEFORE.test(before) || LETTER_AFTER.test(after) || IBAN_HEAD_BEFORE.test(before)) continue
    const category = isCard(span) ? "payment_card"
      : isSsn(span) ? "us_ssn"
      : isIpv4(span, before, after) ? "ipv4"
      : isPhone(span) ? "phone"
      : undefined
    if (category === "payment_card") return category
    if (category !== undefined) (found ??= []).push(category)
  }
  if (found === undefined) return undefined
  for (const category of PII_CATEGORIES) if (found.includes(category)) return category
  return undefined
}

// --- IBAN ----------------------------------------------------------------------------

/** IBAN length by country (ISO 13616 registry, the countries in common use). */
const IBAN_LENGTH: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, CH: 21, CR: 22, CY: 28, CZ: 24,
  DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27,
  GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LI: 21, LT: 20,
  LU: 20, LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29,
  PT: 25, QA: 29, RO: 24, RS: 22, SA: 24, SC: 31, SE: 24, SI: 19, SK: 24, SM: 27, TN: 24, TR: 26, UA: 29, VA: 22,
  VG: 24, XK: 20
}

const IBAN = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b/g

/** ISO 7064 mod 97-10: the rearranged number, letters as 10–35, is 1 modulo 97. */
const mod97 = (iban: string): boolean => {
  const rearranged = iban.slice(4) + iban.slice(0, 4)
  let remainder = 0
  for (let i = 0; i < rearranged.length; i++) {
    const c = rearranged.charCodeAt(i)
    const value = c <= 57 ? c - 48 : c - 55
    remainder = value > 9 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97
  }
  return remainder === 1
}

const hasIban = (text: string): boolean => {
  IBAN.lastIndex = 0
  for (let match = IBAN.exec(text); match !== null; match = IBAN.exec(text)) {
    const iban = match[0].replaceAll(" ", "")
    if (IBAN_LENGTH[iban.slice(0, 2)] === iban.length && mod97(iban)) return true
  }
  return false
}

// --- the scan ------------------------------------------------------------------------

const DIGIT = /\d/
const IBAN_START = /[A-Z]{2}\d{2}/

/**
 * The first PII category in the text, in the order of `PII_CATEGORIES`
 * (secret keys first, IPv4 addresses last), or undefined.
 */
export const findPii = (text: string): PiiCategory | undefined => {
  if (hasSecretKey(text)) return "secret_key"
  const digits = DIGIT.test(text)
  if (digits) {
    const numeric = numericCategory(text)
    if (numeric === "payment_card" || numeric === "us_ssn") return numeric
    if (IBAN_START.test(text) && hasIban(text)) return "iban"
    if (hasEmail(text)) return "email"
    return numeric
  }
  return hasEmail(text) ? "email" : undefined
}
