/** Test helpers: events that look like a learnt one but may not be, for the decoders' templates and shapes. */

/** A small deterministic generator (mulberry32), so a failure repeats. */
export const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** `base`, whose text is `"hello"`, with that text made invalid, or other than a string, or followed by more; and `base` cut or extended. */
export const textMutations = (base: string): Array<string> => [
  base.replace("hello", "he\u0001llo"),
  base.replace("hello", "he\\xllo"),
  base.replace("hello", "he\\u12"),
  base.replace("hello", "hello\\"),
  base.replace("\"hello\"", "\"hello\",\"extra\":1"),
  base.replace("\"hello\"", "\"hello\" "),
  base.replace("\"hello\"", "12"),
  base.replace("\"hello\"", "null"),
  base.slice(0, -1),
  `${base} `,
  `${base}x`
]

const ALPHABET = ["\"", "\\", "}", "]", "{", ",", ":", " ", "a", "1", "\n", "\u0000", "é"]

/** `count` copies of `base`, each with one character replaced, inserted or deleted at random. */
export const randomMutations = (base: string, next: () => number, count: number): Array<string> =>
  Array.from({ length: count }, () => {
    const at = Math.floor(next() * base.length)
    const char = ALPHABET[Math.floor(next() * ALPHABET.length)]
    const how = next()
    return how < 0.4 ? base.slice(0, at) + char + base.slice(at + 1) : how < 0.8 ? base.slice(0, at) + char + base.slice(at) : base.slice(0, at) + base.slice(at + 1)
  })
