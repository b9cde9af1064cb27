/**
 * Pure decoders fail one way (docs/architecture.md "Failures in pure code"):
 * they return effect's `Result`, failing with what was wrong, and never throw,
 * whatever a caller or an upstream sends.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { CALLER_CODECS, PROVIDER_CODECS } from "../../src/formats/index.ts"

const GARBAGE: ReadonlyArray<unknown> = [null, [], "text", 7, { model: 5 }, { model: "m", messages: "not a list", input: 5 }]

describe("decoding untrusted input", () => {
  for (const [format, codec] of Object.entries(CALLER_CODECS)) {
    it(`a malformed ${format} request body is a failed Result naming what is wrong, never an exception`, () => {
      for (const body of GARBAGE) {
        const decoded = codec.decodeRequest(body)
        expect(Result.isFailure(decoded)).toBe(true)
        if (Result.isFailure(decoded)) expect(decoded.failure.message).toMatch(/\S/)
      }
    })
  }
  for (const [family, codec] of Object.entries(PROVIDER_CODECS)) {
    it(`a malformed ${family} upstream answer is a failed Result, never an exception`, () => {
      for (const json of [null, "text", 7, {}]) expect(Result.isFailure(codec.decodeResponse(json))).toBe(true)
    })
  }
})
