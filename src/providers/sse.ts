/**
 * Incremental Server-Sent Events parser (the WHATWG event-stream grammar):
 * bytes in, complete events out. Handles events and UTF-8 characters split
 * across chunks, CRLF/CR/LF line ends, multi-line `data:`, comments.
 * Small enough to own, and on the per-chunk hot path: no regexes.
 */
import type { SseEvent } from "../formats/index.ts"

/** A line longer than this is not an event anyone sends: the stream is broken. */
const MAX_LINE = 16 * 1024 * 1024

export class SseParser {
  private readonly decoder = new TextDecoder()
  /** The line in progress, as the pieces it arrived in (joined once, when it ends: linear in its length). */
  private pending: Array<string> = []
  private pendingLength = 0
  /** The last chunk ended with CR: it ended a line, and a LF opening the next chunk belongs to it. */
  private afterCR = false
  /** Set when a line outgrew `MAX_LINE`; its bytes were dropped. */
  overflowed = false
  private event: string | undefined = undefined
  private data: Array<string> = []

  /** Feeds one chunk; returns the events it completed. Only the new text is scanned (by `indexOf`: native, not a loop per character). */
  push(chunk: Uint8Array): Array<SseEvent> {
    const text = this.decoder.decode(chunk, { stream: true })
    const out: Array<SseEvent> = []
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
      this.line(this.take(text.slice(start, i)), out)
      start = i + 1
      if (i === cr) {
        if (start === text.length) {
          this.afterCR = true
          return out
        }
        if (text.charCodeAt(start) === 10) start++
        cr = text.indexOf("\r", start)
      }
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start)
    }
    if (start < text.length) this.keep(text.slice(start))
    return out
  }

  /** At EOF: an event left without its blank line is still delivered. */
  end(): Array<SseEvent> {
    const out: Array<SseEvent> = []
    const rest = this.decoder.decode()
    if (rest !== "") this.keep(rest)
    if (this.pendingLength > 0) this.line(this.take(""), out)
    this.line("", out)
    return out
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

  private line(line: string, out: Array<SseEvent>): void {
    if (line === "") {
      if (this.data.length > 0) {
        out.push(this.event === undefined ? { data: this.data.join("\n") } : { event: this.event, data: this.data.join("\n") })
      }
      this.event = undefined
      this.data = []
      return
    }
    if (line.charCodeAt(0) === 58) return // ":" comment
    // The line nearly every event is made of, without slicing out its field name.
    if (line.startsWith("data:")) {
      this.data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5))
      return
    }
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === "data") this.data.push(value)
    else if (field === "event") this.event = value
  }
}
