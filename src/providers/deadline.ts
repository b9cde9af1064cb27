/**
 * How long an upstream may stay silent, timed on Effect's `Clock`, so a test
 * under `TestClock` drives the same timeout code as production.
 *
 * The live transport has one `Watch` per client: a single fiber that sleeps
 * until the earliest deadline of the open exchanges, then expires the silent
 * ones and sleeps again. Per request that costs linking the exchange into a
 * list and unlinking it; per chunk, a timestamp write. Not a `Set`: its
 * backing tables, replaced as entries come and go, outlive in the old
 * generation while still pointing at young exchanges, which then get promoted
 * with all they hold (measured: 18 against 11 full GCs over 16,000 requests).
 *
 * Why not a timeout per request: a watch fiber per request (what this
 * replaced) cost 1.31x the CPU per JSON request at full load (bench/compare.ts;
 * 1.12x the main thread's instructions under callgrind, bench/instructions.ts),
 * and `Stream.timeoutOrElse` would race two fibers per chunk, while a deadline
 * almost never fires.
 *
 * Deadlines are not re-planned at each chunk: when the watch wakes, an
 * exchange that was active meanwhile has a later deadline and the watch sleeps
 * until then. It is woken early only when an exchange opens with a deadline
 * before its planned wake (a shorter `idle_timeout` than the open ones, or no
 * exchange open), so under steady traffic it wakes about once per timeout.
 *
 * The scripted test client times its head with `Effect.timeoutOrElse` on the
 * same `Clock`, and fails with the same `timedOut` error.
 */
import { Effect, Latch } from "effect"
import type { Clock } from "effect"
import { UpstreamError } from "../domain/index.ts"
import type { FailureSource } from "../domain/index.ts"

/** What a watch reads; the request writes it as it goes, with no Effect work per chunk. */
export interface Activity {
  /** `Clock` milliseconds of the last sign of life (request body sent, head, body chunk). */
  readonly lastActivityAt: number
  /** The gateway holds the upstream back (the caller reads slowly): that silence is not the upstream's. */
  readonly holding: boolean
  /** Over (ended, failed, aborted): nothing left to time. */
  readonly settled: boolean
}

/** An exchange the watch times: its activity, its allowed silence, and what to do when it runs out. */
export interface Watched extends Activity {
  readonly idleTimeoutMs: number
  /** Called by the watch, once, after `idleTimeoutMs` of silence. */
  expire(): void
  /** The watch's links (its list of open exchanges); only the watch touches them. */
  watchPrev: Watched | undefined
  watchNext: Watched | undefined
  watched: boolean
}

/** The open exchanges of one client and the fiber that times them (`run`, forked once in the client's scope). */
export class Watch {
  /** The open exchanges, a list linked through the exchanges themselves. */
  private first: Watched | undefined = undefined
  /** `Clock` milliseconds the watch wakes at next; infinite while nothing is open. */
  private wakeAt = Number.POSITIVE_INFINITY
  private readonly alarm = Latch.makeUnsafe(false)
  readonly clock: Clock.Clock

  constructor(clock: Clock.Clock) {
    this.clock = clock
  }

  add(exchange: Watched): void {
    exchange.watched = true
    exchange.watchNext = this.first
    if (this.first !== undefined) this.first.watchPrev = exchange
    this.first = exchange
    const deadline = exchange.lastActivityAt + exchange.idleTimeoutMs
    if (deadline < this.wakeAt) {
      this.wakeAt = deadline
      this.alarm.openUnsafe()
    }
  }

  remove(exchange: Watched): void {
    if (!exchange.watched) return
    exchange.watched = false
    const { watchPrev, watchNext } = exchange
    if (watchPrev === undefined) this.first = watchNext
    else watchPrev.watchNext = watchNext
    if (watchNext !== undefined) watchNext.watchPrev = watchPrev
    // A finished exchange keeps no pointer to a live one (it may sit in the old generation a while).
    exchange.watchPrev = undefined
    exchange.watchNext = undefined
  }

  /** Expires the silent exchanges and returns the next deadline among the others. */
  private sweep(now: number): number {
    let next = Number.POSITIVE_INFINITY
    let exchange = this.first
    while (exchange !== undefined) {
      const following: Watched | undefined = exchange.watchNext
      // Held back by the gateway: counted again from now, as the silence is not the upstream's.
      const deadline = exchange.holding ? now + exchange.idleTimeoutMs : exchange.lastActivityAt + exchange.idleTimeoutMs
      if (exchange.settled) {
        this.remove(exchange)
      } else if (deadline <= now) {
        this.remove(exchange)
        exchange.expire()
      } else if (deadline < next) {
        next = deadline
      }
      exchange = following
    }
    return next
  }

  /** The watch's fiber: sweep, then sleep until the next deadline or until an earlier one opens. */
  readonly run: Effect.Effect<never> = Effect.forever(
    Effect.suspend(() => {
      this.alarm.closeUnsafe()
      const now = this.clock.currentTimeMillisUnsafe()
      const next = this.sweep(now)
      this.wakeAt = next
      return next === Number.POSITIVE_INFINITY ? this.alarm.await : Effect.raceFirst(Effect.sleep(next - now), this.alarm.await)
    })
  )
}

/** The failure of an upstream that stayed silent: before its head, or between two chunks. */
export const timedOut = (call: FailureSource & { readonly idleTimeoutMs: number }, phase: "head" | "idle"): UpstreamError =>
  UpstreamError.fault(call, phase === "head" ? `no response within ${call.idleTimeoutMs} ms` : `no data for ${call.idleTimeoutMs} ms`, {
    timeout: phase
  })
