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
  private pending = ""
  /** Set when a line outgrew `MAX_LINE`; its bytes were dropped. */
  overflowed = false
  private event: string | undefined = undefined
  private data: Array<string> = []

  /** Feeds one chunk; returns the events it completed. */
  push(chunk: Uint8Array): Array<SseEvent> {
    const text = this.pending + this.decoder.decode(chunk, { stream: true })
    const out: Array<SseEvent> = []
    let start = 0
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      if (c === 13 && i === text.length - 1) break // maybe the first half of a CRLF
      this.line(text.slice(start, i), out)
      if (c === 13 && text.charCodeAt(i + 1) === 10) i++
      start = i + 1
    }
    // A trailing CR may be the first half of CRLF: keep it with the remainder.
    this.pending = text.slice(start)
    if (this.pending.length > MAX_LINE) {
      this.pending = ""
      this.overflowed = true
    }
    return out
  }

  /** At EOF: an event left without its blank line is still delivered. */
  end(): Array<SseEvent> {
    const out: Array<SseEvent> = []
    let rest = this.pending + this.decoder.decode()
    this.pending = ""
    if (rest.endsWith("\r")) rest = rest.slice(0, -1)
    for (const line of rest.split(/\r\n|\r|\n/)) if (line !== "") this.line(line, out)
    this.line("", out)
    return out
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
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === "data") this.data.push(value)
    else if (field === "event") this.event = value
  }
}
