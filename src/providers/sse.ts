/**
 * Incremental Server-Sent Events parser (the WHATWG event-stream grammar):
 * bytes in, complete events out. Handles events and UTF-8 characters split
 * across chunks, CRLF/CR/LF line ends, multi-line `data:`, comments, a
 * leading byte order mark. Small enough to own, and on the per-chunk hot
 * path: no regexes.
 *
 * Details
 * - `read` hands each event to a sink as its data and name (no object, no
 *   array per chunk: the fast path's stream gate reads every chunk so);
 *   `push` returns them as `SseEvent`s.
 * - Bytes are decoded by Buffer's UTF-8 decoder (a third of `TextDecoder`'s
 *   cost per chunk here); the bytes of a character not yet complete wait for
 *   the next chunk, and a leading BOM is dropped, as `TextDecoder` does.
 *   Invalid bytes become U+FFFD either way.
 */
import type { SseEvent } from "../formats/index.ts"

/** A line longer than this is not an event anyone sends: the stream is broken. */
const MAX_LINE = 16 * 1024 * 1024

/** Receives each complete event: its data, and its name when it had an `event:` field. */
export type SseSink = (data: string, event: string | undefined) => void

const BOM = 0xfeff

/**
 * Where the bytes of a UTF-8 character the chunk does not finish begin (its
 * length when every character is whole). Bytes that can never complete a
 * character (a stray continuation byte, an invalid lead) count as whole: they
 * decode to U+FFFD whatever follows.
 */
const wholeCharactersEnd = (bytes: Uint8Array): number => {
  const n = bytes.length
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const byte = bytes[i]
    if (byte < 0x80) return n
    if (byte >= 0xc0) {
      const length = byte >= 0xf5 || byte < 0xc2 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2
      return n - i < length ? i : n
    }
  }
  return n
}

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

export class SseParser {
  /** The bytes of a character the last chunk did not finish. */
  private partial: Buffer | undefined = undefined
  /** Text has been decoded: a BOM after this is content. */
  private begun = false
  /** The line in progress, as the pieces it arrived in (joined once, when it ends: linear in its length). */
  private pending: Array<string> = []
  private pendingLength = 0
  /** The last chunk ended with CR: it ended a line, and a LF opening the next chunk belongs to it. */
  private afterCR = false
  /** Set when a line outgrew `MAX_LINE`; its bytes were dropped. */
  overflowed = false
  private event: string | undefined = undefined
  /** The event's first `data:` line; the rest, rare, in `moreData`. */
  private data: string | undefined = undefined
  private moreData: Array<string> | undefined = undefined

  /** Feeds one chunk; returns the events it completed. */
  push(chunk: Uint8Array): Array<SseEvent> {
    const out: Array<SseEvent> = []
    this.read(chunk, (data, event) => out.push(event === undefined ? { data } : { event, data }))
    return out
  }

  /** At EOF: an event left without its blank line is still delivered. */
  end(): Array<SseEvent> {
    const out: Array<SseEvent> = []
    this.readEnd((data, event) => out.push(event === undefined ? { data } : { event, data }))
    return out
  }

  /**
   * Feeds one chunk; each event it completes goes to `sink`, in order. Only
   * the new text is scanned (by `indexOf`: native, not a loop per character).
   */
  read(chunk: Uint8Array, sink: SseSink): void {
    const text = this.decode(chunk)
    let start = 0
    // (An empty piece, e.g. bytes of a character not yet complete, leaves a pending CR pending.)
    if (this.afterCR && text.length > 0) {
      this.afterCR = false
      if (text.charCodeAt(0) === 10) start = 1
    }
    let lf = text.indexOf("\n", start)
    // Event streams rarely use CR: after one search finds none, none is looked for again in this chunk.
    let cr = text.indexOf("\r", start)
    while (lf !== -1 || cr !== -1) {
      const i = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr
      if (this.pendingLength === 0) {
        this.line(text, start, i, sink)
      } else {
        const line = this.take(text.slice(start, i))
        this.line(line, 0, line.length, sink)
      }
      start = i + 1
      if (i === cr) {
        if (start === text.length) {
          this.afterCR = true
          return
        }
        if (text.charCodeAt(start) === 10) start++
        cr = text.indexOf("\r", start)
      }
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start)
    }
    if (start < text.length) this.keep(text.slice(start))
  }

  /** At EOF: the event left without its blank line goes to `sink`. */
  readEnd(sink: SseSink): void {
    if (this.partial !== undefined) {
      // A character cut off by the end: U+FFFD, as `TextDecoder`'s flush gives.
      const rest = this.text(this.partial, this.partial.length)
      this.partial = undefined
      this.keep(rest)
    }
    if (this.pendingLength > 0) {
      const line = this.take("")
      this.line(line, 0, line.length, sink)
    }
    this.line("", 0, 0, sink)
  }

  /** The chunk's text, up to its last whole character (the rest waits for the next chunk). */
  private decode(chunk: Uint8Array): string {
    let bytes = asBuffer(chunk)
    if (this.partial !== undefined) {
      bytes = Buffer.concat([this.partial, bytes])
      this.partial = undefined
    }
    const end = wholeCharactersEnd(bytes)
    // A copy: the caller may reuse the chunk's memory.
    if (end < bytes.length) this.partial = Buffer.from(bytes.subarray(end))
    return this.text(bytes, end)
  }

  private text(bytes: Buffer, end: number): string {
    const text = bytes.toString("utf8", 0, end)
    if (this.begun || text.length === 0) return text
    this.begun = true
    return text.charCodeAt(0) === BOM ? text.slice(1) : text
  }

  private keep(piece: string): void {
    this.pendingLength += piece.length
    if (this.pendingLength > MAX_LINE) {
      this.pending = []
      this.pendingLength = 0
      this.overflowed = true
      return
    }
    this.pending.push(piece)
  }

  /** The whole line: what was kept of it plus its last piece. */
  private take(last: string): string {
    if (this.pendingLength === 0) return last
    this.pending.push(last)
    const line = this.pending.join("")
    this.pending = []
    this.pendingLength = 0
    return line
  }

  /** The line `text[start, end)`. */
  private line(text: string, start: number, end: number, sink: SseSink): void {
    if (start === end) {
      const data = this.data
      if (data !== undefined) {
        const more = this.moreData
        this.data = undefined
        this.moreData = undefined
        sink(more === undefined ? data : [data, ...more].join("\n"), this.event)
      }
      this.event = undefined
      return
    }
    if (text.charCodeAt(start) === 58) return // ":" comment
    // The line nearly every event is made of, sliced once, without its field name.
    if (text.startsWith("data:", start)) {
      this.addData(text.slice(text.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end))
      return
    }
    const line = start === 0 && end === text.length ? text : text.slice(start, end)
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === "data") this.addData(value)
    else if (field === "event") this.event = value
  }

  private addData(value: string): void {
    if (this.data === undefined) this.data = value
    else if (this.moreData === undefined) this.moreData = [value]
    else this.moreData.push(value)
  }
}
