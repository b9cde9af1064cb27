/**
 * Stream events read without `JSON.parse`: nearly every event of a streamed
 * answer is the same JSON text as an earlier one (of this stream or of the
 * last ones) but for a few values (its text, the stream's id and creation
 * time, token counts, an obfuscation pad), and parsing each one was most of
 * the fast path's decoding work per stream.
 *
 * Details
 * - A shape is learnt from an event that was parsed: the holes are the
 *   values a decoder names as varying (strings, integers); the shape is the
 *   event re-serialized with a marker in each hole, split at the markers, and
 *   it is kept only if the event itself matches it (a compact serializer
 *   upstream: any spacing or escaping that differs and there is no shape).
 * - An event matches when it is the shape's literal text with a valid JSON
 *   string (or integer) in each hole: then it parses, token for token, to the
 *   learnt object with other values in the holes. The match writes those
 *   values into the learnt object and hands it back: the decoder reads it as
 *   it reads a parsed one, so a matched event decodes exactly as its parse
 *   would. The object is reused by the next match: a decoder reads it and
 *   keeps none of it (only its strings and numbers).
 * - Shapes are kept per wire family, a few of them, shared by the streams
 *   (a stream's id and creation time are holes): a new stream of the same
 *   model parses nothing. What a shape holds is structure and constants, and
 *   a match only yields the values of the event it matched.
 */

import { eventObject } from "./event-data.ts"
import { escapedString, integerEnd, MAX_HOLES, scanned, splitAtHoles, stringEnd } from "./json-holes.ts"
import type { Hole } from "./json-holes.ts"
import { TextChunkTemplate } from "./text-chunk-template.ts"
import type { HoleSpan } from "./text-chunk-template.ts"

export class JsonShape {
  /** The literal text around the holes: one more than the holes. */
  private readonly literals: ReadonlyArray<string>
  /** The holes in the order they come in the text. */
  private readonly holes: ReadonlyArray<Hole>
  private readonly object: Record<string, unknown>
  /** The length of the literals: no event shorter matches. */
  private readonly length: number
  /** Where each hole's value was in the event the last match read. */
  private readonly starts: Array<number>
  private readonly ends: Array<number>

  private constructor(literals: ReadonlyArray<string>, holes: ReadonlyArray<Hole>, object: Record<string, unknown>) {
    this.literals = literals
    this.holes = holes
    this.object = object
    this.length = literals.reduce((sum, literal) => sum + literal.length, 0)
    this.starts = holes.map(() => 0)
    this.ends = holes.map(() => 0)
  }

  /**
   * The shape of `object`, parsed from `data`, with `holes` (values of
   * `object` or of objects inside it); undefined when `data` is not the
   * object's compact serialization. The shape keeps `object`.
   */
  static learn(data: string, object: Record<string, unknown>, holes: ReadonlyArray<Hole>): JsonShape | undefined {
    const split = splitAtHoles(object, holes)
    if (split === undefined) return undefined
    const shape = new JsonShape(split.literals, split.holes, object)
    return shape.match(data) === undefined ? undefined : shape
  }

  /** The learnt object with the values of `data` in its holes, when `data` is of this shape; undefined when it is not (parse it). */
  match(data: string): Record<string, unknown> | undefined {
    const literals = this.literals
    const holes = this.holes
    const last = literals[literals.length - 1]
    // The end first: events of other shapes mostly differ there (a finish, a usage, a role), and this is one compare.
    if (data.length < this.length || data.substring(data.length - last.length) !== last) return undefined
    let at = 0
    for (let i = 0; i < holes.length; i++) {
      const literal = literals[i]
      // (A substring compared is a memcmp: `startsWith` compares character by character, 3-8 times slower here.)
      if (data.substring(at, at + literal.length) !== literal) return undefined
      at += literal.length
      const hole = holes[i]
      let end: number
      if (hole.kind === "integer") {
        end = integerEnd(data, at)
        if (end === -1) return undefined
        hole.owner[hole.key] = scanned.integer
      } else {
        end = stringEnd(data, at)
        if (end === -1) return undefined
        const value = scanned.escaped ? escapedString(data, at, end) : data.slice(at, end)
        if (value === undefined) return undefined
        hole.owner[hole.key] = value
      }
      this.starts[i] = at
      this.ends[i] = end
      at = end
    }
    return data.length === at + last.length ? this.object : undefined
  }

  /**
   * The template of the text chunk the last match read, its holes `text`
   * (the text, and values nobody reads): the other holes are fixed to their
   * values in it. Undefined when one of `text` is not a hole of this shape.
   */
  textTemplate(data: string, text: ReadonlyArray<Hole>): TextChunkTemplate | undefined {
    const spans: Array<HoleSpan> = []
    for (let i = 0; i < this.holes.length; i++) {
      const hole = this.holes[i]
      const wanted = text.find((other) => other.owner === hole.owner && other.key === hole.key)
      if (wanted !== undefined) spans.push({ start: this.starts[i], end: this.ends[i], kind: wanted.kind })
    }
    return spans.length === text.length ? TextChunkTemplate.within(data, spans) : undefined
  }
}

/** Shapes a stream may learn: one whose events keep changing shape is parsed, as before. */
const LEARNT_PER_STREAM = 4

/** The holes of a family's events: its strings that vary, by key; its integers but those of some keys. */
export interface HoleRule {
  /** Keys whose string values differ from event to event (a text, an id, arguments). */
  readonly strings: ReadonlySet<string>
  /** Keys whose integers stay in the shape (an index, mostly 0: a hole costs each match more than the rare shape it saves). */
  readonly fixedIntegers: ReadonlySet<string>
  /** Whether an event's shape is worth keeping (an error's is not). */
  readonly learns: (object: Record<string, unknown>) => boolean
}

/** The holes of `value` under `rule`, added to `holes`; false when there are more than a shape can have. */
const collectHoles = (value: Record<string, unknown> | Array<unknown>, rule: HoleRule, holes: Array<Hole>): boolean => {
  const keys = Array.isArray(value) ? undefined : Object.keys(value)
  const count = keys === undefined ? (value as Array<unknown>).length : keys.length
  for (let i = 0; i < count; i++) {
    const key = keys === undefined ? String(i) : keys[i]
    const item = (value as Record<string, unknown>)[key]
    if (typeof item === "string") {
      if (keys !== undefined && rule.strings.has(key)) holes.push({ owner: value as Record<string, unknown>, key, kind: "string" })
    } else if (Number.isSafeInteger(item)) {
      if (keys !== undefined && rule.fixedIntegers.has(key)) continue
      holes.push({ owner: value as Record<string, unknown>, key, kind: "integer" })
    } else if (typeof item === "object" && item !== null && !collectHoles(item as Record<string, unknown>, rule, holes)) {
      return false
    }
    if (holes.length > MAX_HOLES) return false
  }
  return true
}

/**
 * The shapes of one wire family's events, shared by its streams: the last
 * `size` learnt (a stream of a model seen lately parses nothing).
 */
export class JsonShapes {
  readonly learnt: Array<JsonShape> = []
  private next = 0
  private readonly size: number
  private readonly rule: HoleRule

  constructor(size: number, rule: HoleRule) {
    this.size = size
    this.rule = rule
  }

  /** The holes of a parsed event worth learning the shape of; undefined when it is not. */
  holesOf(object: Record<string, unknown>): ReadonlyArray<Hole> | undefined {
    if (!this.rule.learns(object)) return undefined
    const holes: Array<Hole> = []
    return collectHoles(object, this.rule, holes) ? holes : undefined
  }

  add(shape: JsonShape): void {
    if (this.learnt.length < this.size) {
      this.learnt.push(shape)
      return
    }
    this.learnt[this.next] = shape
    this.next = (this.next + 1) % this.size
  }

  /** A reader for one stream. */
  reader(): ShapeReader {
    return new ShapeReader(this)
  }
}

/** One stream's reading of its events' data: by a shape it matches, else by `JSON.parse` (then its shape is learnt). */
export class ShapeReader {
  private readonly shapes: JsonShapes
  private learning = LEARNT_PER_STREAM
  /** The shape the event last read matched (where its holes were is known), if one did. */
  matched: JsonShape | undefined = undefined

  constructor(shapes: JsonShapes) {
    this.shapes = shapes
  }

  /**
   * The event's data as a JSON object; undefined when it does not parse or is
   * not an object. The object is the shape's when one matched: read it before
   * the next event, and keep none of it.
   */
  read(data: string): Record<string, unknown> | undefined {
    const learnt = this.shapes.learnt
    for (let i = 0; i < learnt.length; i++) {
      const object = learnt[i].match(data)
      if (object !== undefined) {
        this.matched = learnt[i]
        return object
      }
    }
    this.matched = undefined
    const object = eventObject(data)
    if (object === undefined || this.learning === 0) return object
    const holes = this.shapes.holesOf(object)
    if (holes === undefined) return object
    const shape = JsonShape.learn(data, object, holes)
    // Not the compact serialization: the upstream's serializer differs, and will for every event.
    if (shape === undefined) {
      this.learning = 0
      return object
    }
    this.learning--
    this.shapes.add(shape)
    this.matched = shape
    return object
  }
}
