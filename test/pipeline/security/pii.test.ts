/**
 * PII detection, per category: what must match and the near misses that must
 * not (an order number that fails Luhn, an IBAN with a wrong checksum, a
 * version string, a timestamp), and text that mixes categories.
 */
import { describe, expect, it } from "vitest"
import { findPii, PII_CATEGORIES } from "../../../src/pipeline/security/pii.ts"
import type { PiiCategory } from "../../../src/pipeline/security/pii.ts"

const CASES: Readonly<Record<PiiCategory, { readonly match: ReadonlyArray<string>; readonly pass: ReadonlyArray<string> }>> = {
  email: {
    match: [
      "write to john.doe@example.com",
      "a+b@sub.domain.co.uk",
      "ADMIN@EXAMPLE.ORG is the contact",
      "first_last@company-name.io",
      "x@y.museum",
      "me@mail.example.travel",
      "<jane@example.com>",
      "mailto:team.ops+alerts@example.net",
      "support@xn--bcher-kva.example",
      "ticket from o'brien@example.ie" // the apostrophe ends the local part: brien@example.ie
    ],
    pass: [
      "user@localhost",
      "@mention in a tweet",
      "john..doe@example.com",
      ".john@example.com",
      "name@domain",
      "price is 5@unit",
      "a @ b . com",
      "email me at john dot doe at example dot com",
      "foo@bar.c",
      "the @Override annotation"
    ]
  },
  phone: {
    match: [
      "call +1 (415) 555-0132 today",
      "+44 20 7946 0958",
      "(415) 555-0132",
      "415-555-0132",
      "415.555.0132",
      "030 1234567",
      "01 23 45 67 89",
      "98765 43210",
      "+91 98765 43210",
      "+49 30 12345678",
      "020 7946 0958",
      "+33 1 23 45 67 89"
    ],
    pass: [
      "meeting at 2024-01-15 10:30:00",
      "timestamp 2024-01-15T10:30:00Z",
      "order ORD-123456789",
      "count 1234567",
      "zip 94103",
      "pi is 3.14159265",
      "epoch 1700000000000",
      "115-555-0132",
      "(415) 155-0132",
      "room 12-34",
      "ratio 1/2/3/4"
    ]
  },
  us_ssn: {
    match: [
      "ssn 123-45-6789",
      "123 45 6789",
      "SSN: 078-05-1120",
      "my number is 219-09-9999.",
      "(456-78-9012)",
      "ids 001-01-0001 and more",
      "665-12-3456",
      "899-99-9999",
      "234-56-7890",
      "SSN 321-54-9876"
    ],
    pass: [
      "000-12-3456",
      "666-12-3456",
      "900-12-3456",
      "123-00-6789",
      "123-45-0000",
      "123456789",
      "123-456-789",
      "12-345-6789",
      "123-45-67890",
      "version 123-45-678"
    ]
  },
  payment_card: {
    match: [
      "card 4111 1111 1111 1111",
      "4111-1111-1111-1111",
      "4111111111111111",
      "378282246310005",
      "3782 822463 10005",
      "5555555555554444",
      "2223003122003222",
      "6011111111111117",
      "3530111333300000",
      "4012888888881881",
      "36227206271667",
      "4111 1111-1111 1111"
    ],
    pass: [
      "4111 1111 1111 1112",
      "order 1234 5678 9012 3456",
      "tracking 1234567812345678",
      "4111 11111111 1111",
      "card ending 1111",
      "9111111111111115",
      "41111111111",
      "5105 1051 0510 5106",
      "0000 0000 0000 0000",
      "1234-5678-9012-3456"
    ]
  },
  iban: {
    match: [
      "IBAN DE89 3704 0044 0532 0130 00",
      "GB82WEST12345698765432",
      "GB82 WEST 1234 5698 7654 32",
      "FR1420041010050500013M02606",
      "NL91ABNA0417164300",
      "pay to ES9121000418450200051332",
      "CH9300762011623852957",
      "BE68539007547034",
      "IT60X0542811101000000123456",
      "AT611904300234573201"
    ],
    pass: [
      "DE89 3704 0044 0532 0130 01",
      "GB82WEST12345698765433",
      "XX89370400440532013000",
      "DE893704004405320130",
      "NL91ABNA04171643001",
      "ABCD1234",
      "code DE00 0000",
      "FR14 2004",
      "see page GB82",
      "NL00ABNA0417164300"
    ]
  },
  ipv4: {
    match: [
      "server 192.168.1.10 is down",
      "10.0.0.1",
      "ssh root@ 203.0.113.7",
      "0.0.0.0",
      "127.0.0.1",
      "8.8.8.8 resolves",
      "from 172.16.254.1:443",
      "255.255.255.255",
      "[10.20.30.40]",
      "host=198.51.100.23;"
    ],
    pass: [
      "version 1.2.3.4",
      "v1.2.3.4",
      "1.2.3.4.5",
      "256.1.1.1",
      "192.168.01.1",
      "1.2.3",
      "release 10.0.0.1",
      "pi 3.141.592.65",
      "999.999.999.999",
      "1.2.3.4.5.6"
    ]
  },
  secret_key: {
    match: [
      "key sk-proj-Abc123Def456Ghi789Jkl012Mno345",
      "sk-ant-api03-AbCdEf123456GhIjKl789012MnOp",
      "OPENAI_API_KEY=sk-1a2B3c4D5e6F7g8H9i0J1k2L3m4N",
      "AKIAIOSFODNN7EXAMPLE",
      "ASIAY34FZKBOKMUTVV7A",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA",
      "-----BEGIN PRIVATE KEY-----",
      "-----BEGIN OPENSSH PRIVATE KEY-----",
      "sk_live_51HGkL2ABcDeFgHiJ0123456",
      "-----BEGIN EC PRIVATE KEY-----"
    ],
    pass: [
      "sk-learn-is-a-machine-learning-library",
      "-----BEGIN PUBLIC KEY-----",
      "-----BEGIN CERTIFICATE-----",
      "AKIA is a prefix",
      "sk-short1",
      "desk-organizer-with-drawers-and-shelves",
      "AKIAIOSFODNN7EXAMPL",
      "risk-assessment-framework-2024-final-version",
      "ask-me-anything-about-the-universe-today",
      "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ is a public key"
    ]
  }
}

describe("PII detection", () => {
  for (const category of PII_CATEGORIES) {
    describe(category, () => {
      it(`finds ${category} in ${CASES[category].match.length} examples`, () => {
        for (const text of CASES[category].match) expect([text, findPii(text)]).toEqual([text, category])
      })
      it(`lets ${CASES[category].pass.length} near misses pass`, () => {
        for (const text of CASES[category].pass) expect([text, findPii(text)]).toEqual([text, undefined])
      })
    })
  }

  it("text that mixes categories reports the first in a fixed order: secret key, card, SSN, IBAN, email, phone, IPv4", () => {
    expect(findPii("mail john@example.com from 10.0.0.1")).toBe("email")
    expect(findPii("call (415) 555-0132 or mail john@example.com, card 4111 1111 1111 1111")).toBe("payment_card")
    expect(findPii("ssn 123-45-6789 and ip 192.168.0.1")).toBe("us_ssn")
    expect(findPii("AKIAIOSFODNN7EXAMPLE with 4111111111111111")).toBe("secret_key")
    expect(findPii("IBAN GB82WEST12345698765432, phone +44 20 7946 0958")).toBe("iban")
    expect(findPii("call +1 (415) 555-0132 from 8.8.8.8")).toBe("phone")
  })

  it("ordinary prose, code and numbers pass", () => {
    for (const text of [
      "Summarize the quarterly report: revenue grew 12.5% to $4,200,000 in Q3 2024.",
      "for (let i = 0; i < 100; i++) { total += values[i] * 2.5 }",
      "The meeting is on 2024-03-15 at 14:30 in room 4B; bring 3 copies.",
      "npm install effect@4.1.0 undici@8.12.4",
      ""
    ]) expect(findPii(text)).toBeUndefined()
  })
})
