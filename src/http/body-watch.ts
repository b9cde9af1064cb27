/**
 * Watching a request body as it arrives, so a caller cannot hold a connection
 * (and whatever it is bound to upstream) by sending slowly.
 *
 * Two rules, checked every `idleMs` on one timer per request with a body:
 * - no progress: nothing arrived since the last check;
 * - too slow (when `minBytesPerSec` > 0): since the body began, fewer than
 *   `minBytesPerSec` bytes arrived per second on average, after a head start
 *   of `idleMs`. A caller dribbling a byte every few seconds makes progress
 *   but fails this; an upload at any real link's speed meets it, and one
 *   that stalls a while is carried by what it sent before.
 *
 * Gotchas
 * - Time the gateway itself is behind (bytes waiting unread in the request,
 *   as when a slow upstream holds an upload back) counts for neither rule:
 *   it is the gateway's slowness, not the caller's.
 * - Plain Node timers: this is the edge, outside any Effect program.
 */
import type * as Http from "node:http"

export type BodyStall = "idle" | "slow"

export interface BodyWatchOptions {
  /** A body with nothing new for this long stalls; also the head start of the rate rule. */
  readonly idleMs: number
  /** The average rate a body must keep (0: no rate rule). */
  readonly minBytesPerSec: number
}

export const watchBody = (req: Http.IncomingMessage, options: BodyWatchOptions, onStall: (stall: BodyStall) => void): void => {
  const { idleMs, minBytesPerSec } = options
  const first = req.socket.bytesRead
  let seen = first
  let last = performance.now()
  // When a body with no bytes at all would be late: the head start, moved on by every wait on the gateway.
  let lateFrom = last + idleMs
  const timer = setTimeout(function check() {
    if (req.complete || req.destroyed) return
    const now = performance.now()
    const read = req.socket.bytesRead
    // Bytes waiting in the request's buffer mean the gateway is the slow reader, not the caller.
    const gatewayBehind = req.readableLength > 0
    if (gatewayBehind) lateFrom += now - last
    else if (read === seen) return onStall("idle")
    else if (minBytesPerSec > 0 && now > lateFrom + ((read - first) * 1000) / minBytesPerSec) return onStall("slow")
    seen = read
    last = now
    timer.refresh()
  }, idleMs)
  timer.unref()
  const stop = () => clearTimeout(timer)
  req.once("end", stop)
  req.once("close", stop)
}
