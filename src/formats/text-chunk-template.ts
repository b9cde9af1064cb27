/**
 * The shape of a stream's text chunks, learnt from one of them, so that the
 * next ones are read without `JSON.parse`: nearly every event of a streamed
 * answer is the same JSON text but for its text (and, on some wires, a
 * sequence number or an obfuscation pad), and parsing each one is most of
 * the fast path's work per chunk.
 *
 * Details
 * - A decoder learns a template from a chunk it parsed and found to be text
 *   only (nothing but its text changes what it decodes to), naming the holes:
 *   the text, and values it never reads (strings, integers). The template is
 *   the chunk re-serialized with a marker in each hole, split at the markers;
 *   it is kept only if the chunk itself matches it (a compact serializer
 *   upstream: any spacing or escaping that differs and there is no template).
 * - A chunk matches when it is the template's literal text with a valid JSON
 *   string (or integer) in each hole: then it parses, token for token, to the
 *   learnt chunk with other values in the holes, so it decodes to a text
 *   delta of its text and nothing else. Anything else (the finish, usage, an
 *   error, a tool call, a malformed chunk) does not match and is parsed.
 */

/** What a hole holds: the chunk's text, or a string or integer nobody reads. */
export type HoleKind = "text" | "string" | "integer"

/** A value of the learnt chunk that differs from chunk to chunk: `owner[key]`. */
export interface Hole {
  readonly owner: Record<string, unknown>
  readonly key: string
  readonly kind: HoleKind
}

/** Hole markers: strings no upstream sends, serialized as `"\u0001"`…; at most 7 holes. */
const MARKERS = ["\u0001", "\u0002", "\u0003", "\u0004", "\u0005", "\u0006", "\u0007"]
const MARKS = MARKERS.map((marker) => JSON.stringify(marker))

const QUOTE = 34
const BACKSLASH = 92

/** Whether the string token `stringEnd` last read had an escape in it (its validity is then JSON.parse's to judge). */
let escapeSeen = false

/** End (its closing quote) of the string token whose text starts at `from`; -1 when there is none. */
const stringEnd = (data: string, from: number): number => {
  escapeSeen = false
  for (let i = from; i < data.length; i++) {
    const c = data.charCodeAt(i)
    if (c === QUOTE) return i
    if (c === BACKSLASH) {
      escapeSeen = true
      i++
    } else if (c < 32) {
      return -1
    }
  }
  return -1
}

/** End of the integer token (`-?(0|[1-9][0-9]*)`) at `from`; -1 when there is none. */
const integerEnd = (data: string, from: number): number => {
  let i = data.charCodeAt(from) === 45 ? from + 1 : from
  const first = data.charCodeAt(i)
  if (first === 48) return i + 1
  if (!(first >= 49 && first <= 57)) return -1
  i++
  while (i < data.length) {
    const c = data.charCodeAt(i)
    if (c < 48 || c > 57) break
    i++
  }
  return i
}

/** Whether `data[from, to)`, a string token's text with an escape in it, is a valid one. */
const validEscapes = (data: string, from: number, to: number): boolean => {
  try {
    JSON.parse(data.slice(from - 1, to + 1))
    return true
  } catch {
    return false
  }
}

export class TextChunkTemplate {
  /** The literal text around the holes: one more than the holes. */
  private readonly literals: ReadonlyArray<string>
  private readonly kinds: ReadonlyArray<HoleKind>

  private constructor(literals: ReadonlyArray<string>, kinds: ReadonlyArray<HoleKind>) {
    this.literals = literals
    this.kinds = kinds
  }

  /**
   * The template of `chunk`, parsed from `data`, with `holes` (one of them the
   * text); undefined when `data` is not the chunk's compact serialization.
   */
  static learn(data: string, chunk: Record<string, unknown>, holes: ReadonlyArray<Hole>): TextChunkTemplate | undefined {
    if (holes.length > MARKERS.length) return undefined
    const saved = holes.map((hole) => hole.owner[hole.key])
    let serialized: string
    try {
      holes.forEach((hole, i) => {
        hole.owner[hole.key] = MARKERS[i]
      })
      serialized = JSON.stringify(chunk)
    } finally {
      holes.forEach((hole, i) => {
        hole.owner[hole.key] = saved[i]
      })
    }
    const at: Array<number> = []
    for (let i = 0; i < holes.length; i++) {
      const position = serialized.indexOf(MARKS[i])
      // A marker found twice: some value holds it too, and the holes are not known.
      if (position === -1 || serialized.indexOf(MARKS[i], position + 1) !== -1) return undefined
      at.push(position)
    }
    const order = holes.map((_, i) => i).sort((a, b) => at[a] - at[b])
    const literals: Array<string> = []
    const kinds: Array<HoleKind> = []
    let from = 0
    for (const i of order) {
      // A string hole keeps its quotes in the literals; an integer's marker is replaced whole.
      const quoted = holes[i].kind !== "integer"
      literals.push(serialized.slice(from, quoted ? at[i] + 1 : at[i]))
      from = quoted ? at[i] + MARKS[i].length - 1 : at[i] + MARKS[i].length
      kinds.push(holes[i].kind)
    }
    literals.push(serialized.slice(from))
    const template = new TextChunkTemplate(literals, kinds)
    return template.match(data) === undefined ? undefined : template
  }

  /** The text of `data` when it is a chunk of this shape; undefined when it is not (parse it). */
  match(data: string): string | undefined {
    const literals = this.literals
    const kinds = this.kinds
    let at = 0
    let textStart = -1
    let textEnd = -1
    let escaped = false
    for (let i = 0; i < kinds.length; i++) {
      const literal = literals[i]
      // (A substring compared is a memcmp: `startsWith` compares character by character, 3-8 times slower here.)
      if (data.substring(at, at + literal.length) !== literal) return undefined
      at += literal.length
      const kind = kinds[i]
      const end = kind === "integer" ? integerEnd(data, at) : stringEnd(data, at)
      if (end === -1) return undefined
      if (kind !== "integer" && escapeSeen) {
        if (kind === "text") escaped = true
        else if (!validEscapes(data, at, end)) return undefined
      }
      if (kind === "text") {
        textStart = at
        textEnd = end
      }
      at = end
    }
    const last = literals[literals.length - 1]
    if (data.length !== at + last.length || data.substring(at) !== last) return undefined
    if (!escaped) return data.slice(textStart, textEnd)
    try {
      return JSON.parse(data.slice(textStart - 1, textEnd + 1)) as string
    } catch {
      return undefined
    }
  }
}
