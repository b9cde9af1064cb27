import { describe, expect, it } from "vitest"
import { eventsEnd, forwardStage, lastEventEnd, OPEN_GATE } from "../../../src/pipeline/forward/verbatim.ts"
import type { RequestContext } from "../../../src/pipeline/context.ts"
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

/** A small deterministic generator (mulberry32), so a failure repeats. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/**
 * What a committed stream released per chunk before the aligner stopped copying each chunk:
 * the held bytes' last 3 joined to the whole chunk, scanned for the last event end.
 */
const releasedBefore = (chunks: ReadonlyArray<Uint8Array>): Array<string> => {
  let held: Array<Uint8Array> = []
  return chunks.map((chunk) => {
    let end: number
    if (held.length === 0) {
      end = lastEventEnd(chunk)
    } else {
      const last = held[held.length - 1]
      const lookBack = last.subarray(Math.max(0, last.length - 3))
      const at = lastEventEnd(Buffer.concat([lookBack, chunk]))
      end = at === -1 ? -1 : at - lookBack.length
    }
    if (end === -1) {
      held.push(chunk)
      return ""
    }
    const out = Buffer.concat([...held, chunk.subarray(0, end)]).toString("latin1")
    held = end < chunk.length ? [chunk.subarray(end)] : []
    return out
  })
}

describe("a committed stream goes out event by event", () => {
  it("cut anywhere, each chunk releases the bytes up to its last event end, as it did when each chunk was joined to the held bytes' tail", () => {
    const next = random(29)
    const pieces = ["data: x", "event: e", "\n", "\r", "\r\n", ": c", "data:", "y"]
    for (let round = 0; round < 2000; round++) {
      const text = Array.from({ length: 2 + Math.floor(next() * 20) }, () => pieces[Math.floor(next() * pieces.length)]).join("")
      const bytes = Buffer.from(text, "latin1")
      const cuts = [0, ...Array.from({ length: 1 + Math.floor(next() * 6) }, () => Math.floor(next() * (bytes.length + 1))).sort((a, b) => a - b), bytes.length]
      const chunks = cuts.slice(1).map((end, i) => bytes.subarray(cuts[i], end))
      const stage = forwardStage({ log: {} } as unknown as RequestContext, "openai", OPEN_GATE)
      const released = chunks.map((chunk) => {
        const out: Array<Uint8Array> = []
        stage.push(chunk, out)
        return Buffer.concat(out).toString("latin1")
      })
      expect(released, JSON.stringify(chunks.map((chunk) => Buffer.from(chunk).toString("latin1")))).toEqual(releasedBefore(chunks))
    }
  })
})
