import { describe, expect, it } from "vitest"
import { eventsEnd, lastEventEnd } from "../../../src/pipeline/forward/verbatim.ts"
import { SseParser } from "../../../src/providers/sse.ts"

/** The events a caller's parser has complete after `bytes` (no end of stream). */
const eventsIn = (bytes: Uint8Array) => new SseParser().push(bytes)

// Every pair of line ends, in every mix the event-stream grammar allows.
const ends = ["\n", "\r\n", "\r"]
const texts = ends.flatMap((first) => ends.map((second) => `data: one${first}${second}data: two${first}${second}data: thr`))

describe("where a stream's bytes may be cut so that only whole events go out", () => {
  it("every prefix is cut after its last whole event: nothing complete is held back, nothing partial goes out", () => {
    for (const text of texts) {
      const bytes = Buffer.from(text)
      for (let length = 1; length <= bytes.length; length++) {
        const prefix = bytes.subarray(0, length)
        const end = lastEventEnd(prefix)
        const complete = eventsIn(prefix)
        if (complete.length === 0) {
          expect(end, JSON.stringify(prefix.toString())).toBe(-1)
        } else {
          // The part released holds exactly the events complete so far; what is held is no event yet.
          expect(eventsIn(prefix.subarray(0, end)), JSON.stringify(prefix.toString())).toEqual(complete)
          expect(eventsIn(prefix.subarray(end)), JSON.stringify(prefix.toString())).toEqual([])
        }
      }
    }
  })

  it("one line end is not an event's end", () => {
    for (const end of ends) expect(lastEventEnd(Buffer.from(`data: x${end}`))).toBe(-1)
  })
})

describe("where the good events before a break in a chunk end, so that they still go out", () => {
  it("the first n events a chunk completes end right after the nth, wherever the chunk begins and whatever came before it", () => {
    for (const text of texts.map((t) => `: comment\n${t}\n\n`)) {
      const bytes = Buffer.from(text)
      const all = eventsIn(bytes)
      for (let cut = 0; cut <= bytes.length; cut++) {
        // Bytes not yet written (the stream's start here), then the chunk the break is in.
        const unsent = bytes.subarray(0, cut)
        const chunk = bytes.subarray(cut)
        const before = eventsIn(unsent).length
        for (let n = 0; n <= all.length - before; n++) {
          const end = eventsEnd(unsent, chunk, n)
          const what = `${JSON.stringify(text)} cut at ${cut}, ${n} events`
          // Those events go out whole; the rest holds all of the others, nothing of theirs torn.
          expect(eventsIn(bytes.subarray(0, end)), what).toEqual(all.slice(0, before + n))
          expect(eventsIn(bytes.subarray(end)), what).toEqual(all.slice(before + n))
        }
        expect(eventsEnd(unsent, chunk, all.length - before + 1)).toBe(-1)
      }
    }
  })
})
