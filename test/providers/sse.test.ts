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

describe("SSE parsing cost", () => {
  it("one 5 MB event arriving in 1 KB pieces is parsed whole (only new bytes are scanned)", () => {
    const parser = new SseParser()
    const piece = bytes("y".repeat(1024))
    const events = [...parser.push(bytes("data: ")), ...Array.from({ length: 5 * 1024 }, () => parser.push(piece)).flat(), ...parser.push(bytes("\n\n"))]
    expect(events).toHaveLength(1)
    expect(events[0].data.length).toBe(5 * 1024 * 1024)
  })
})
