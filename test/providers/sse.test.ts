import { describe, expect, it } from "vitest"
import { SseParser } from "../../src/providers/sse.ts"

const bytes = (text: string) => new TextEncoder().encode(text)
const feed = (parser: SseParser, pieces: ReadonlyArray<string | Uint8Array>) =>
  pieces.flatMap((piece) => parser.push(typeof piece === "string" ? bytes(piece) : piece))

describe("SSE parsing", () => {
  it("parses events with names, multi-line data and comments", () => {
    const parser = new SseParser()
    expect(feed(parser, [": keep-alive\n\nevent: message_start\ndata: {\"a\":1}\n\ndata: line one\ndata: line two\n\n"])).toEqual([
      { event: "message_start", data: "{\"a\":1}" },
      { data: "line one\nline two" }
    ])
  })
  it("an event split across chunks anywhere, CRLF included, comes out whole and once", () => {
    const text = "event: x\r\ndata: {\"k\":\"v\"}\r\n\r\ndata: [DONE]\r\n\r\n"
    for (let cut = 1; cut < text.length; cut++) {
      const parser = new SseParser()
      expect(feed(parser, [text.slice(0, cut), text.slice(cut)])).toEqual([{ event: "x", data: "{\"k\":\"v\"}" }, { data: "[DONE]" }])
    }
  })
  it("LF, CRLF and lone CR line ends mixed in one stream, cut into three pieces anywhere, give the same events", () => {
    const text = "data: a\n\nevent: e\rdata: b\r\rdata:c\r\ndata: d\r\n\r\n: note\n\ndata: é\n\n"
    const expected = [{ data: "a" }, { event: "e", data: "b" }, { data: "c\nd" }, { data: "é" }]
    const encoded = bytes(text)
    expect(feed(new SseParser(), [encoded])).toEqual(expected)
    for (let first = 1; first < encoded.length; first++) {
      for (let second = first; second < encoded.length; second++) {
        const parser = new SseParser()
        const pieces = [encoded.subarray(0, first), encoded.subarray(first, second), encoded.subarray(second)]
        expect([...feed(parser, pieces), ...parser.end()]).toEqual(expected)
      }
    }
  })
  it("a UTF-8 character split between chunks is decoded intact", () => {
    const encoded = bytes("data: héllo 日本\n\n")
    const parser = new SseParser()
    expect(feed(parser, [encoded.subarray(0, 9), encoded.subarray(9, 14), encoded.subarray(14)])).toEqual([{ data: "héllo 日本" }])
  })
  it("an event without its closing blank line is delivered at the end", () => {
    const parser = new SseParser()
    expect(feed(parser, ["data: last"])).toEqual([])
    expect(parser.end()).toEqual([{ data: "last" }])
  })
  it("a line of exactly 16 MiB is read; a longer one is dropped and flagged", () => {
    const limit = 16 * 1024 * 1024
    const exact = new SseParser()
    const events = feed(exact, ["data: ", "x".repeat(limit - 6), "\n\n"])
    expect(exact.overflowed).toBe(false)
    expect(events[0].data.length).toBe(limit - 6)
    const over = new SseParser()
    feed(over, ["data: ", "x".repeat(limit - 5), "\n\n"])
    expect(over.overflowed).toBe(true)
  })
  it("a line that never ends is dropped past 16 MiB and flagged, not buffered forever", () => {
    const parser = new SseParser()
    const piece = "x".repeat(1024 * 1024)
    feed(parser, ["data: ", ...Array.from({ length: 17 }, () => piece)])
    expect(parser.overflowed).toBe(true)
    expect(feed(parser, ["\n\ndata: next\n\n"])).toEqual([{ data: "next" }])
  })
})

/** A small deterministic generator (mulberry32), so a failure repeats. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

describe("SSE text decoding", () => {
  it("a leading byte order mark is dropped, a later one kept", () => {
    const parser = new SseParser()
    const bom = [0xef, 0xbb, 0xbf]
    expect(feed(parser, [new Uint8Array([bom[0]]), new Uint8Array([bom[1], bom[2], ...bytes("data: \ufeffx\n\n")])])).toEqual([{ data: "\ufeffx" }])
  })
  it("any bytes, valid UTF-8 or not, cut anywhere, read as TextDecoder reads them whole", () => {
    const pieces: ReadonlyArray<ReadonlyArray<number>> = [
      [...bytes("data: ")], [...bytes("event: e\n")], [10], [13], [13, 10], [58], [...bytes("é")], [...bytes("日")], [...bytes("😀")],
      [0xf0, 0x9f], [0xe6], [0xc3], [0x80], [0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe0, 0x80], [0xef, 0xbb, 0xbf], [0x41]
    ]
    const next = random(29)
    for (let round = 0; round < 300; round++) {
      const all = Uint8Array.from(Array.from({ length: 1 + Math.floor(next() * 40) }, () => pieces[Math.floor(next() * pieces.length)]).flat())
      // The reference: the whole body decoded at once, re-encoded (behind the one BOM the parser drops).
      const reference = new SseParser()
      const text = new TextDecoder().decode(all)
      const expected = [...reference.push(Uint8Array.from([0xef, 0xbb, 0xbf, ...bytes(text)])), ...reference.end()]
      const parser = new SseParser()
      const cuts = [0, ...Array.from({ length: 3 }, () => Math.floor(next() * (all.length + 1))).sort((a, b) => a - b), all.length]
      const events = [...feed(parser, cuts.slice(1).map((end, i) => all.subarray(cuts[i], end))), ...parser.end()]
      expect(events).toEqual(expected)
    }
  })
})

describe("SSE parsing cost", () => {
  it("one 5 MB event arriving in 1 KB pieces is parsed whole (only new bytes are scanned)", () => {
    const parser = new SseParser()
    const piece = bytes("y".repeat(1024))
    const events = [...parser.push(bytes("data: ")), ...Array.from({ length: 5 * 1024 }, () => parser.push(piece)).flat(), ...parser.push(bytes("\n\n"))]
    expect(events).toHaveLength(1)
    expect(events[0].data.length).toBe(5 * 1024 * 1024)
  })
})
