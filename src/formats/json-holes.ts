/**
 * What the stream decoders' templates of an event are made of (text-chunk-template.ts,
 * json-shape.ts): a parsed event re-serialized with a marker in each of its
 * holes (the values that differ from event to event) and split there; and
 * the scans that read a JSON string or integer token in a hole. Per event,
 * on the decoders' hot path: no regexes, no allocation.
 */

/** What a hole holds: the event's text (read), a string or an integer. */
export type HoleKind = "text" | "string" | "integer"

/** A value of the learnt event that differs from event to event: `owner[key]`. */
export interface Hole {
  readonly owner: Record<string, unknown>
  readonly key: string
  readonly kind: HoleKind
}

/** Hole markers: strings no upstream sends, serialized as `"\u0001"`…(no short escape such as `"\n"`). */
const MARKERS = Array.from({ length: 24 }, (_, i) => String.fromCharCode(i + 1)).filter((marker) => JSON.stringify(marker).length === 8)
const MARKS = MARKERS.map((marker) => JSON.stringify(marker))

/** At most this many holes in an event. */
export const MAX_HOLES = MARKERS.length

/**
 * `object`, parsed from an event, serialized compactly with its holes cut
 * out: the literal text around them (one more than the holes) and the holes
 * in the order they come. A string hole's quotes stay in the literals.
 * Undefined when a marker is found twice (some value holds it too).
 */
export const splitAtHoles = (
  object: Record<string, unknown>,
  holes: ReadonlyArray<Hole>
): { readonly literals: ReadonlyArray<string>; readonly holes: ReadonlyArray<Hole> } | undefined => {
  if (holes.length > MARKERS.length) return undefined
  const saved = holes.map((hole) => hole.owner[hole.key])
  let serialized: string
  try {
    holes.forEach((hole, i) => {
      hole.owner[hole.key] = MARKERS[i]
    })
    serialized = JSON.stringify(object)
  } finally {
    holes.forEach((hole, i) => {
      hole.owner[hole.key] = saved[i]
    })
  }
  const at: Array<number> = []
  for (let i = 0; i < holes.length; i++) {
    const position = serialized.indexOf(MARKS[i])
    if (position === -1 || serialized.indexOf(MARKS[i], position + 1) !== -1) return undefined
    at.push(position)
  }
  const order = holes.map((_, i) => i).sort((a, b) => at[a] - at[b])
  const literals: Array<string> = []
  let from = 0
  for (const i of order) {
    // A string hole keeps its quotes in the literals; an integer's marker is replaced whole.
    const quoted = holes[i].kind !== "integer"
    literals.push(serialized.slice(from, quoted ? at[i] + 1 : at[i]))
    from = quoted ? at[i] + MARKS[i].length - 1 : at[i] + MARKS[i].length
  }
  literals.push(serialized.slice(from))
  return { literals, holes: order.map((i) => holes[i]) }
}

/** What the last scan read: whether its string had an escape (its validity is then JSON.parse's to judge), its integer's value. */
export const scanned = { escaped: false, integer: 0 }

const QUOTE = 34
const BACKSLASH = 92

/** End (its closing quote) of the string token whose text starts at `from`; -1 when there is none. */
export const stringEnd = (data: string, from: number): number => {
  let escaped = false
  for (let i = from; i < data.length; i++) {
    const c = data.charCodeAt(i)
    if (c === QUOTE) {
      scanned.escaped = escaped
      return i
    }
    if (c === BACKSLASH) {
      escaped = true
      i++
    } else if (c < 32) {
      return -1
    }
  }
  return -1
}

/** End of the integer token (`-?(0|[1-9][0-9]*)`) at `from`, its value in `scanned.integer`; -1 when there is none. */
export const integerEnd = (data: string, from: number): number => {
  const negative = data.charCodeAt(from) === 45
  let i = negative ? from + 1 : from
  const first = data.charCodeAt(i)
  if (first === 48) {
    scanned.integer = negative ? -0 : 0
    return i + 1
  }
  if (!(first >= 49 && first <= 57)) return -1
  let value = first - 48
  i++
  while (i < data.length) {
    const c = data.charCodeAt(i)
    if (c < 48 || c > 57) break
    value = value * 10 + (c - 48)
    i++
  }
  // Past 2^53 the sum above rounds at each step; JSON.parse rounds once.
  scanned.integer = value > Number.MAX_SAFE_INTEGER ? Number(data.slice(from, i)) : negative ? -value : value
  return i
}

/** The string token `data[from, to)` (its text, quotes excluded) with an escape in it: its value, or undefined when it is not a valid one. */
export const escapedString = (data: string, from: number, to: number): string | undefined => {
  try {
    return JSON.parse(data.slice(from - 1, to + 1)) as string
  } catch {
    return undefined
  }
}
