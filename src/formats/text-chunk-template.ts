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
 *   A chunk a `JsonShape` read (json-shape.ts) needs neither: its template is
 *   cut from its own text where the shape's holes were (`within`).
 * - A chunk matches when it is the template's literal text with a valid JSON
 *   string (or integer) in each hole: then it parses, token for token, to the
 *   learnt chunk with other values in the holes, so it decodes to a text
 *   delta of its text and nothing else. Anything else (the finish, usage, an
 *   error, a tool call, a malformed chunk) does not match and is parsed.
 */

import { escapedString, integerEnd, scanned, splitAtHoles, stringEnd } from "./json-holes.ts"
import type { Hole, HoleKind } from "./json-holes.ts"

export type { Hole, HoleKind } from "./json-holes.ts"

/** A hole's place in an event's text: `[start, end)` (a string's text, its quotes outside). */
export interface HoleSpan {
  readonly start: number
  readonly end: number
  readonly kind: HoleKind
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
    const split = splitAtHoles(chunk, holes)
    if (split === undefined) return undefined
    const template = new TextChunkTemplate(split.literals, split.holes.map((hole) => hole.kind))
    return template.match(data) === undefined ? undefined : template
  }

  /**
   * The template of a text chunk `data` whose holes are at `spans` (in order,
   * one of them the text), known without a parse: `data` matched a shape
   * (json-shape.ts) whose other holes are fixed here to their values in
   * `data`.
   */
  static within(data: string, spans: ReadonlyArray<HoleSpan>): TextChunkTemplate {
    const literals: Array<string> = []
    let from = 0
    for (const span of spans) {
      literals.push(data.slice(from, span.start))
      from = span.end
    }
    literals.push(data.slice(from))
    return new TextChunkTemplate(literals, spans.map((span) => span.kind))
  }

  /**
   * The text of `data` when it is a chunk of this shape; undefined when it is
   * not (parse it). With `read` false, "" for a chunk of this shape: its text
   * is checked, not made.
   */
  match(data: string, read = true): string | undefined {
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
      if (kind !== "integer" && scanned.escaped) {
        if (kind === "text") escaped = true
        else if (escapedString(data, at, end) === undefined) return undefined
      }
      if (kind === "text") {
        textStart = at
        textEnd = end
      }
      at = end
    }
    const last = literals[literals.length - 1]
    if (data.length !== at + last.length || data.substring(at) !== last) return undefined
    if (!read) return escaped && escapedString(data, textStart, textEnd) === undefined ? undefined : ""
    return escaped ? escapedString(data, textStart, textEnd) : data.slice(textStart, textEnd)
  }
}
