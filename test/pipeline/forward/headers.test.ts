import { Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { callerKey, passThroughHeaders, responseHeaders } from "../../../src/pipeline/forward/headers.ts"

const keyOf = (headers: Record<string, string>) => {
  const key = callerKey(headers)
  return key === undefined ? undefined : Redacted.value(key)
}

describe("callerKey", () => {
  it("reads the caller's key from Authorization: Bearer, x-api-key or api-key, the same on every request", () => {
    for (let i = 0; i < 3; i++) {
      expect(keyOf({ authorization: "Bearer sk-one" })).toBe("sk-one")
      expect(keyOf({ authorization: "bearer   sk-two  " })).toBe("sk-two")
      expect(keyOf({ "x-api-key": "sk-three" })).toBe("sk-three")
      expect(keyOf({ "api-key": "sk-four" })).toBe("sk-four")
      expect(keyOf({ authorization: "Basic dXNlcjpwYXNz" })).toBeUndefined()
      expect(keyOf({ "x-api-key": "" })).toBeUndefined()
      expect(keyOf({})).toBeUndefined()
    }
  })

  it("never takes a key sent alone for the same text sent as an Authorization value", () => {
    expect(keyOf({ "x-api-key": "Bearer sk-five" })).toBe("Bearer sk-five")
    expect(keyOf({ authorization: "Bearer sk-five" })).toBe("sk-five")
    expect(keyOf({ "x-api-key": "Bearer sk-five" })).toBe("Bearer sk-five")
  })

  it("still reads every key right after many different callers", () => {
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 600; i++) {
        expect(keyOf({ authorization: `Bearer sk-caller-${i}` })).toBe(`sk-caller-${i}`)
        expect(keyOf({ "x-api-key": `sk-plain-${i}` })).toBe(`sk-plain-${i}`)
      }
    }
    expect(keyOf({ authorization: "Bearer sk-caller-0" })).toBe("sk-caller-0")
  })

  it("is Redacted: the key never shows when printed", () => {
    const key = callerKey({ authorization: "Bearer sk-secret-value" })
    expect(String(key)).not.toContain("sk-secret-value")
    expect(JSON.stringify({ key })).not.toContain("sk-secret-value")
  })
})

describe("hop-by-hop headers named by Connection", () => {
  it("are dropped both ways; keep-alive and close name none", () => {
    const incoming = { connection: "keep-alive, X-Hop", "x-hop": "1", "x-kept": "2", "content-type": "application/json" }
    expect(passThroughHeaders(incoming, {}, "req-1")).toEqual({ "x-kept": "2", "content-type": "application/json", "x-request-id": "req-1" })
    expect(responseHeaders(incoming, "verbatim")).toEqual({ "x-kept": "2", "content-type": "application/json" })
    for (const connection of ["keep-alive", "Keep-Alive", "close"]) {
      const plain = { connection, "x-hop": "1", "x-kept": "2" }
      expect(passThroughHeaders(plain, {}, "req-2")).toEqual({ "x-hop": "1", "x-kept": "2", "x-request-id": "req-2" })
      expect(responseHeaders(plain, "verbatim")).toEqual({ "x-hop": "1", "x-kept": "2" })
    }
    expect(responseHeaders({ connection: ["keep-alive", "x-hop"], "x-hop": "1" } as never, "verbatim")).toEqual({})
  })
})
