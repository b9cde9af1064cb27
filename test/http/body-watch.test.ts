/**
 * The body watch's two rules on a scripted request: what arrived (the
 * socket's byte count) and what the gateway has not read yet are set by the
 * test, and the clock is Vitest's fake one (the edge runs on plain Node
 * timers, outside Effect's TestClock).
 */
import { EventEmitter } from "node:events"
import type * as Http from "node:http"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { watchBody } from "../../src/http/body-watch.ts"
import type { BodyStall } from "../../src/http/body-watch.ts"

const IDLE_MS = 1000
const MIN_RATE = 100

/** A request whose body arrives as the test says. */
const scriptedRequest = () => {
  const req = Object.assign(new EventEmitter(), {
    socket: { bytesRead: 0 },
    readableLength: 0,
    complete: false,
    destroyed: false
  })
  const stalls: Array<{ stall: BodyStall; atMs: number }> = []
  const started = Date.now()
  watchBody(req as unknown as Http.IncomingMessage, { idleMs: IDLE_MS, minBytesPerSec: MIN_RATE }, (stall) => stalls.push({ stall, atMs: Date.now() - started }))
  /** `bytes` arrive in each of the next `ms` / 100 steps of 100 ms. */
  const arrive = (bytes: number, ms: number) => {
    for (let step = 0; step < ms / 100; step++) {
      req.socket.bytesRead += bytes
      vi.advanceTimersByTime(100)
    }
  }
  return { req, stalls, arrive }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance", "Date"] })
})
afterEach(() => {
  vi.useRealTimers()
})

describe("watchBody", () => {
  it("a body dribbled below the minimum rate stalls as too slow once the head start is spent", () => {
    const { stalls, arrive } = scriptedRequest()
    // 10 bytes/s: progress at every check, a tenth of the minimum rate.
    arrive(1, 10_000)
    expect(stalls.map((s) => s.stall)).toEqual(["slow"])
    // The head start (1 s) plus the 20 bytes' own allowance (0.2 s) were spent by the second check.
    expect(stalls[0].atMs).toBe(2 * IDLE_MS)
  })

  it("a body that stops arriving stalls as idle", () => {
    const { stalls, arrive } = scriptedRequest()
    arrive(500, 1000)
    arrive(0, 3000)
    expect(stalls.map((s) => s.stall)).toEqual(["idle"])
  })

  it("a body at the minimum rate or above never stalls", () => {
    const { req, stalls, arrive } = scriptedRequest()
    arrive(MIN_RATE / 10, 20_000)
    req.complete = true
    req.emit("end")
    vi.advanceTimersByTime(10_000)
    expect(stalls).toEqual([])
  })

  it("time the gateway holds the body back is not counted against the caller", () => {
    const { req, stalls, arrive } = scriptedRequest()
    arrive(MIN_RATE / 10, 1000)
    // The gateway reads nothing for 5 s (a slow upstream): the caller cannot send.
    req.readableLength = 64 * 1024
    arrive(0, 5000)
    req.readableLength = 0
    // Then the caller goes on at the minimum rate: on time, counting only its own time.
    arrive(MIN_RATE / 10, 5000)
    expect(stalls).toEqual([])
  })

  it("with no minimum rate, only a body that stops arriving stalls", () => {
    const req = Object.assign(new EventEmitter(), { socket: { bytesRead: 0 }, readableLength: 0, complete: false, destroyed: false })
    const stalls: Array<BodyStall> = []
    watchBody(req as unknown as Http.IncomingMessage, { idleMs: IDLE_MS, minBytesPerSec: 0 }, (stall) => stalls.push(stall))
    for (let step = 0; step < 100; step++) {
      req.socket.bytesRead += 1
      vi.advanceTimersByTime(100)
    }
    expect(stalls).toEqual([])
    vi.advanceTimersByTime(2 * IDLE_MS)
    expect(stalls).toEqual(["idle"])
  })
})
