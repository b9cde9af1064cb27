import { describe, expect, it } from "vitest"
import { lastEventEnd } from "../../../src/pipeline/forward/verbatim.ts"
import { SseParser } from "../../../src/providers/sse.ts"

/** The events a caller's parser has complete after `bytes` (no end of stream). */
const eventsIn = (bytes: Uint8Array) => new SseParser().push(bytes)

describe("where a stream's bytes may be cut so that only whole events go out", () => {
  // Every pair of line ends, in every mix the event-stream grammar allows.
  const ends = ["\n", "\r\n", "\r"]
  const texts = ends.flatMap((first) => ends.map((second) => `data: one${first}${second}data: two${first}${second}data: thr`))

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
