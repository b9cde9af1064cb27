/**
 * Checks on a parsed JSON request body that `JSON.parse` does not make:
 *
 * - Depth: at most `MAX_JSON_DEPTH` nested objects and arrays. Deeper bodies
 *   would overflow the stack of the translators and encoders (a 25 KB body
 *   nested 5,000 levels deep), so they are refused up front.
 * - Numbers: every number finite. `1e400` parses as Infinity and would reach a
 *   translated upstream as `null`, a value the caller never sent.
 * - Duplicate keys that routing reads: with two `model` keys the gateway
 *   routes by the last one while an upstream reading the raw bytes may take
 *   the first, serving a model the gateway never resolved.
 *
 * The walk visits values, not bytes (string contents are never scanned). The duplicate scan runs only when the key's text occurs
 * twice in the raw body, which a normal body never does.
 */

export const MAX_JSON_DEPTH = 128

/** Keys whose value decides routing: given twice at the top level, the body is ambiguous. */
const ROUTING_KEYS = ["model", "stream"] as const

const OUT_OF_RANGE = "a number in the body is out of range (it does not fit a 64-bit float)"
const TOO_DEEP = `the body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`

/** Why a parsed body cannot be accepted, or undefined. */
export const jsonProblem = (json: unknown): string | undefined => problemIn(json, 1)

/**
 * The walk, depth first: recursion is bounded by `MAX_JSON_DEPTH` (a deeper
 * value is refused before it is entered), and no array of children is made
 * per object (a request's messages and parts are many small objects).
 */
const problemIn = (value: unknown, depth: number): string | undefined => {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : OUT_OF_RANGE
  if (typeof value !== "object" || value === null) return undefined
  if (depth > MAX_JSON_DEPTH) return TOO_DEEP
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i]
      if (typeof child === "object" || typeof child === "number") {
        const problem = problemIn(child, depth + 1)
        if (problem !== undefined) return problem
      }
    }
    return undefined
  }
  const record = value as Record<string, unknown>
  for (const key in record) {
    const child = record[key]
    if (typeof child === "object" || typeof child === "number") {
      const problem = problemIn(child, depth + 1)
      if (problem !== undefined) return problem
    }
  }
  return undefined
}

const QUOTE = 34
const BACKSLASH = 92

/**
 * The first routing key given twice at the top level of the raw body, or
 * undefined. Strings are skipped (an escaped quote never ends one), depth is
 * tracked, and a key is a string followed by `:` at depth 1.
 */
export const duplicateRoutingKey = (raw: Uint8Array, text: string): string | undefined => {
  const candidates = ROUTING_KEYS.filter((key) => {
    const needle = `"${key}"`
    const first = text.indexOf(needle)
    return first !== -1 && text.indexOf(needle, first + needle.length) !== -1
  })
  if (candidates.length === 0) return undefined
  const seen = new Set<string>()
  let depth = 0
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i]
    if (byte === QUOTE) {
      const start = i + 1
      let end = start
      while (end < raw.length && raw[end] !== QUOTE) end += raw[end] === BACKSLASH ? 2 : 1
      i = end
      if (depth !== 1) continue
      let next = end + 1
      while (next < raw.length && (raw[next] === 32 || raw[next] === 9 || raw[next] === 10 || raw[next] === 13)) next++
      if (raw[next] !== 58) continue // not followed by ":": a value, not a key
      const key = Buffer.from(raw.buffer, raw.byteOffset + start, end - start).toString("utf8")
      if (!(candidates as ReadonlyArray<string>).includes(key)) continue
      if (seen.has(key)) return key
      seen.add(key)
    } else if (byte === 123 || byte === 91) {
      depth++
    } else if (byte === 125 || byte === 93) {
      depth--
    }
  }
  return undefined
}
