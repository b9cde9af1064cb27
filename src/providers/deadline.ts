/**
 * How long an upstream may stay silent, timed on Effect's `Clock`: the live
 * transport and the scripted test client both wait through `silence`, so a
 * test under `TestClock` drives the same timeout code as production.
 *
 * Why a watch and not `Stream.timeoutOrElse`: that races a sleep against
 * every pull, two fibers per chunk on the hottest path of the gateway. A watch
 * is one fiber per upstream request that sleeps until the deadline; each chunk
 * only stores a timestamp, and the watch, on waking, sleeps again for what is
 * left when there was activity meanwhile.
 */
import { Effect } from "effect"
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

/** No activity ever: `silence` of it is a plain timeout. */
export const NO_ACTIVITY: Activity = { lastActivityAt: Number.NEGATIVE_INFINITY, holding: false, settled: false }

/** Succeeds with true once `idleMs` pass without activity, with false once the activity settles first. */
export const silence = (activity: Activity, idleMs: number): Effect.Effect<boolean> =>
  Effect.clockWith((clock) => {
    const check = (): Effect.Effect<boolean> => {
      if (activity.settled) return Effect.succeed(false)
      const left = activity.holding ? idleMs : activity.lastActivityAt + idleMs - clock.currentTimeMillisUnsafe()
      return left > 0 ? Effect.flatMap(Effect.sleep(left), check) : Effect.succeed(true)
    }
    return Effect.flatMap(Effect.sleep(idleMs), check)
  })

/** The failure of an upstream that stayed silent: before its head, or between two chunks. */
export const timedOut = (call: FailureSource & { readonly idleTimeoutMs: number }, phase: "head" | "idle"): UpstreamError =>
  UpstreamError.fault(call, phase === "head" ? `no response within ${call.idleTimeoutMs} ms` : `no data for ${call.idleTimeoutMs} ms`, {
    timeout: phase
  })
