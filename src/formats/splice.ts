/**
 * Replacing the top-level `model` of a JSON request body without parsing and
 * re-serializing it: the fast path sends the caller's bytes upstream, and an
 * alias (`model: "smart"` → target `gpt-4o`) should cost a splice, not a
 * `JSON.stringify` of a long conversation.
 *
 * The scan walks bytes (UTF-8 multi-byte characters never contain ASCII
 * bytes), skips strings, tracks depth, and stops at the first key at depth 1
 * that is exactly `"model"`. It only splices when that value is exactly the
 * expected string; anything unusual returns undefined and the caller falls
 * back to re-serializing.
 */

const QUOTE = 34
const BACKSLASH = 92
const COLON = 58
const isSpace = (byte: number) => byte === 32 || byte === 10 || byte === 13 || byte === 9

const encoder = new TextEncoder()

/** End index (exclusive) of the string starting at `start` (a quote), or -1. */
const stringEnd = (bytes: Uint8Array, start: number): number => {
  for (let i = start + 1; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === BACKSLASH) i++
    else if (byte === QUOTE) return i + 1
  }
  return -1
}

const equalsAt = (bytes: Uint8Array, at: number, expected: Uint8Array): boolean => {
  if (at + expected.length > bytes.length) return false
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false
  return true
}

const MODEL_KEY = encoder.encode('"model"')

export const replaceTopLevelModel = (body: Uint8Array, expected: string, replacement: string): Uint8Array | undefined => {
  const expectedBytes = encoder.encode(JSON.stringify(expected))
  let depth = 0
  let expectingKey = false
  for (let i = 0; i < body.length; i++) {
    const byte = body[i]
    if (byte === QUOTE) {
      const end = stringEnd(body, i)
      if (end === -1) return undefined
      if (depth === 1 && expectingKey && end - i === MODEL_KEY.length && equalsAt(body, i, MODEL_KEY)) {
        let v = end
        while (v < body.length && isSpace(body[v])) v++
        if (body[v] !== COLON) return undefined
        v++
        while (v < body.length && isSpace(body[v])) v++
        if (!equalsAt(body, v, expectedBytes)) return undefined
        const valueEnd = v + expectedBytes.length
        const value = encoder.encode(JSON.stringify(replacement))
        const out = new Uint8Array(body.length - expectedBytes.length + value.length)
        out.set(body.subarray(0, v), 0)
        out.set(value, v)
        out.set(body.subarray(valueEnd), v + value.length)
        return out
      }
      expectingKey = false
      i = end - 1
    } else if (byte === 123 || byte === 91) {
      depth++
      expectingKey = byte === 123 && depth === 1
    } else if (byte === 125 || byte === 93) {
      depth--
    } else if (byte === 44) {
      expectingKey = depth === 1
    }
  }
  return undefined
}
