/**
 * After large bodies stop coming, the gateway collects their garbage itself
 * instead of holding it until V8's memory reducer gets to it (about 100 s on
 * an idle process). The quiet period runs on Vitest's fake clock (the edge
 * runs on plain Node timers, outside Effect's TestClock); the GC itself is
 * V8's, awaited turn by turn, never by time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { bodyRead, LARGE_BODY_BYTES, QUIET_MS } from "../../src/http/reclaim.ts"

/** Garbage only a weak reference still points at. */
const garbage = (): WeakRef<object> => new WeakRef({ bytes: Buffer.alloc(1024).toString("hex") })

/** Up to `turns` turns of the event loop, until `done`. */
const turnsUntil = async (done: () => boolean, turns = 200): Promise<boolean> => {
  for (let turn = 0; turn < turns && !done(); turn++) await new Promise((resolve) => setImmediate(resolve))
  return done()
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] })
})
afterEach(() => {
  vi.useRealTimers()
})

describe("giving back the memory of large bodies", () => {
  it("collects the garbage once large bodies have stopped for the quiet period", async () => {
    const ref = garbage()
    await turnsUntil(() => false, 1)
    bodyRead(LARGE_BODY_BYTES)
    vi.advanceTimersByTime(QUIET_MS / 2)
    bodyRead(LARGE_BODY_BYTES * 10)
    vi.advanceTimersByTime(QUIET_MS)
    expect(await turnsUntil(() => ref.deref() === undefined)).toBe(true)
    // The process goes on (the inspector session is closed on the next turn, never inside its callback).
    expect(await turnsUntil(() => false, 5)).toBe(false)
  })
})
