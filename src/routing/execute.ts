/**
 * The plan engine: runs one request's attempts through a plan's steps as a
 * fallback chain, each attempt wrapped in the retry schedule.
 *
 * Per failure classification (docs/reference/DESIGN.md "Plans"):
 * - retry: rate_limit, overloaded, upstream (5xx, network, timeout) — the
 *   same target again per the schedule, then the next target;
 * - next target at once: auth, forbidden, quota, model_not_found,
 *   org_verification_required;
 * - stop and answer: bad_request, content_policy (another target would fail
 *   the same way).
 *
 * An attempt fails only while nothing has reached the caller: once a stream
 * has sent its first byte, its failures are written as the stream's error
 * frame by the attempt itself, so nothing is retried or failed over after it.
 *
 * Hedging (`hedge_after_ms` on a target, for a caller that passes `Hedging`):
 * a target that has not answered by then gets the step's next target started
 * beside it, the two raced (`raceLater`, below): the first answer wins and
 * the other fiber is interrupted; one failing leaves the other running. With
 * no target hedged the engine runs them one at a time, as above.
 */
import { Clock, Context, Duration, Effect, Exit, Fiber, Pull, Schedule } from "effect"
import type { Cause } from "effect"
import { dispositionOf, onExitInPlace } from "../domain/index.ts"
import type { UpstreamError } from "../domain/index.ts"
import type { Plan, PlanStep, PlanTarget } from "./plan.ts"
import { isRetryable } from "./retry.ts"
import { drawWeighted } from "./sampler.ts"

export interface AttemptInfo {
  /** 1-based, counted across the whole request. */
  readonly attempt: number
  readonly target: PlanTarget
  /**
   * In a hedged race: `primary` for an attempt of the target that may be
   * hedged, `hedge` for one started beside it; absent when the attempt runs
   * alone (nothing else may touch the request's state meanwhile).
   */
  readonly hedge?: "primary" | "hedge" | undefined
}

export interface ExecutionObserver {
  /** An attempt ended: it answered, failed, or (`lost`) another attempt of its hedged race answered first. */
  readonly onAttempt?: (info: AttemptInfo, outcome: "ok" | "lost" | UpstreamError, durationMs: number) => void
  /** A hedged race ended: the hedge at `target` answered (`won`) or did not (`lost`). */
  readonly onHedge?: (target: PlanTarget, outcome: "won" | "lost") => void
}

/**
 * Hedging (`hedge_after_ms` on a target): what the plan engine needs of the
 * caller to run two attempts at once. Without it, targets run one at a time.
 */
export interface Hedging<A> {
  /** An answer that came too late (its race was already won): release it, since nobody will read it. */
  readonly discard: (answer: A) => Effect.Effect<void>
}

export const executePlan = <A, R>(
  plan: Plan,
  steps: ReadonlyArray<PlanStep>,
  attempt: (info: AttemptInfo) => Effect.Effect<A, UpstreamError, R>,
  observer: ExecutionObserver = {},
  hedging?: Hedging<A>
): Effect.Effect<A, UpstreamError, R> =>
  Effect.suspend(() => {
    let count = 0
    let last: UpstreamError | undefined
    /** Hedges started so far in this request (`max_hedges` bounds them). */
    let hedges = 0
    const { schedule } = plan
    const { onAttempt } = observer

    const once = (target: PlanTarget, race?: HedgeRace, role?: "primary" | "hedge"): Effect.Effect<A, UpstreamError, R> =>
      Effect.suspend(() => {
        const info: AttemptInfo = race === undefined ? { attempt: ++count, target } : { attempt: ++count, target, hedge: role }
        if (onAttempt === undefined) return attempt(info)
        const started = performance.now()
        // Told as the exit is known, in place: nothing left to run.
        return onExitInPlace(attempt(info), (exit) => {
          if (Exit.isSuccess(exit)) onAttempt(info, "ok", performance.now() - started)
          else if (exit.cause.reasons[0]?._tag === "Fail") onAttempt(info, exit.cause.reasons[0].error, performance.now() - started)
          else if (race?.answered === true) onAttempt(info, "lost", performance.now() - started)
          return undefined
        })
      })

    const onTarget = (target: PlanTarget, race?: HedgeRace, role?: "primary" | "hedge") => retried(once(target, race, role), schedule)

    const run = (stepIndex: number, targets: ReadonlyArray<PlanTarget>, targetIndex: number): Effect.Effect<A, UpstreamError, R> => {
      if (targetIndex >= targets.length) return nextStep(stepIndex + 1)
      const target = targets[targetIndex]
      if (hedging !== undefined && target.hedgeAfterMs !== undefined && targetIndex + 1 < targets.length) {
        return hedgedRun(stepIndex, targets, targetIndex, hedging)
      }
      return Effect.catch(onTarget(target), (error) => {
        last = error
        return dispositionOf(error.reason) === "stop" ? Effect.fail(error) : run(stepIndex, targets, targetIndex + 1)
      })
    }

    /**
     * The targets from `targetIndex` on as a hedged race: once it is over
     * (answered, or every attempt in it failed), each hedge is reported, and
     * a failed race goes on after the last target it started.
     */
    const hedgedRun = (stepIndex: number, targets: ReadonlyArray<PlanTarget>, targetIndex: number, hedging: Hedging<A>): Effect.Effect<A, UpstreamError, R> =>
      Effect.suspend(() => {
        const race: HedgeRace = { reached: targetIndex, hedged: [], answered: false, answeredBy: -1 }
        const reported = onExitInPlace(hedged(targets, targetIndex, "primary", race, hedging), () => {
          for (const index of race.hedged) observer.onHedge?.(targets[index], index === race.answeredBy ? "won" : "lost")
          return undefined
        })
        return reported.pipe(
          Effect.catch((error) => {
            last = error
            return dispositionOf(error.reason) === "stop" ? Effect.fail(error) : run(stepIndex, targets, race.reached + 1)
          })
        )
      })

    /**
     * The target at `index` (with its retries) and, if it has not answered
     * within its `hedge_after_ms` and the request may hedge again, the next
     * target of the step beside it (itself hedged the same way). The first to
     * answer wins and the other is interrupted (its scope closed, so its
     * upstream request is aborted). One that fails leaves the other running;
     * a target that fails before its hedge started is followed at once.
     */
    const hedged = (targets: ReadonlyArray<PlanTarget>, index: number, role: "primary" | "hedge", race: HedgeRace, hedging: Hedging<A>): Effect.Effect<A, UpstreamError, R> => {
      const target = targets[index]
      const answering = (answer: A): Effect.Effect<A> => {
        if (!race.answered) {
          race.answered = true
          race.answeredBy = index
          return Effect.succeed(answer)
        }
        // Answered in the same instant as the winner: nobody reads it.
        return Effect.andThen(hedging.discard(answer), Effect.never)
      }
      const after = target.hedgeAfterMs
      if (after === undefined || index + 1 >= targets.length) return Effect.flatMap(onTarget(target, race, role), answering)
      return Effect.suspend(() => {
        let started = false
        let ownFailed = false
        let hedgeFailed = false
        const own = onTarget(target, race, role).pipe(
          Effect.flatMap(answering),
          Effect.catch((error) => {
            ownFailed = true
            return !started || hedgeFailed ? Effect.fail(error) : Effect.never
          })
        )
        const hedge = (): Effect.Effect<A, UpstreamError, R> | undefined => {
          if (hedges >= (target.maxHedges ?? 1)) return undefined
          hedges++
          started = true
          race.hedged.push(index + 1)
          race.reached = Math.max(race.reached, index + 1)
          return hedged(targets, index + 1, "hedge", race, hedging).pipe(
            Effect.catch((error) => {
              hedgeFailed = true
              return ownFailed ? Effect.fail(error) : Effect.never
            })
          )
        }
        // The first to settle: an answer, or the failure of whichever of the two failed last.
        return raceLater(own, after, hedge)
      })
    }

    const nextStep = (stepIndex: number): Effect.Effect<A, UpstreamError, R> => {
      if (stepIndex >= steps.length) {
        return last === undefined ? Effect.die(new Error(`plan ${plan.name} has no targets`)) : Effect.fail(last)
      }
      const step = steps[stepIndex]
      return step.strategy === "weighted"
        ? Effect.flatMap(drawWeighted(step.targets), (target) => run(stepIndex, [target], 0))
        : run(stepIndex, step.targets, 0)
    }

    return nextStep(0)
  })

/**
 * `Effect.retry(attempt, { schedule, while: isRetryable })` with the schedule's
 * step made at the first failure instead of before the first try: an attempt
 * that answers, nearly every one, pays for no schedule (ten of a JSON
 * request's 78 runtime steps, and their closures). The step's clock starts at
 * its first call either way, so the delays and elapsed times it sees are the
 * same; a failure that may not be retried, or one past the schedule, is the
 * attempt's failure, as with `Effect.retry`.
 */
const retried = <A, R>(attempt: Effect.Effect<A, UpstreamError, R>, schedule: Schedule.Schedule<number, UpstreamError>): Effect.Effect<A, UpstreamError, R> =>
  Effect.catch(attempt, (first) => {
    if (!isRetryable(first)) return Effect.fail(first)
    return Effect.flatMap(Schedule.toStepWithMetadata(schedule), (step) => {
      let last = first
      const again: Effect.Effect<A, UpstreamError | Cause.Done<number>, R> = Effect.catch(attempt, (error) => {
        if (!isRetryable(error)) return Effect.fail(error)
        last = error
        return Effect.andThen(step(error), again)
      })
      return Pull.catchDone(Effect.andThen(step(first), again), () => Effect.fail(last))
    })
  })

/**
 * `Effect.raceAllFirst([primary, Effect.sleep(afterMs).pipe(andThen(later))])`, with the second
 * fiber made only when the timer fires (a plain timer until then): a hedge armed on every
 * request but seldom started costs one fiber and a timer, not two fibers, a sleep and an
 * interruption (+10 % of a JSON request's instructions, bench/README.md's stage table). As with
 * `raceAllFirst`, the first fiber to exit settles the race, the other is interrupted and
 * awaited before the race answers, and interrupting the race interrupts both. `later` may
 * decline (`undefined`): `primary` then runs alone.
 */
const raceLater = <A, E, R>(
  primary: Effect.Effect<A, E, R>,
  afterMs: number,
  later: () => Effect.Effect<A, E, R> | undefined
): Effect.Effect<A, E, R> =>
  Effect.withFiber((parent) =>
    Effect.callback<A, E>((resume) => {
      const context = parent.context as Context.Context<R>
      let settled = false
      let second: Fiber.Fiber<A, E> | undefined
      const settle = (exit: Exit.Exit<A, E>, loser: Fiber.Fiber<A, E> | undefined): void => {
        if (settled) return
        settled = true
        cancel()
        if (loser === undefined || loser.pollUnsafe() !== undefined) return resume(exit)
        loser.addObserver(() => resume(exit))
        loser.interruptUnsafe(parent.id)
      }
      const fire = (): void => {
        if (settled) return
        const effect = later()
        if (effect === undefined) return
        second = Effect.runForkWith(context)(effect)
        second.addObserver((exit) => settle(exit, first))
      }
      const first = Effect.runForkWith(context)(primary)
      const cancel = timer(parent, afterMs, fire)
      first.addObserver((exit) => settle(exit, second))
      // Interrupted from outside: both stop, and the race ends once both have.
      return Effect.suspend(() => {
        settled = true
        cancel()
        return second === undefined ? Fiber.interrupt(first) : Fiber.interruptAll([first, second])
      })
    })
  )

/** The clock every fiber reads unless another is provided (a `TestClock`, say). */
const systemClock = Context.get(Context.empty(), Clock.Clock)
/** The longest delay `setTimeout` keeps (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Calls `fire` after `ms` on `fiber`'s clock; the result cancels it. On the system clock a plain
 * timer; on another (a `TestClock`) a fiber sleeping on it, so virtual time drives it.
 */
const timer = (fiber: Fiber.Fiber<unknown, unknown>, ms: number, fire: () => void): () => void => {
  const clock = fiber.getRef(Clock.Clock)
  if (clock === systemClock && ms <= MAX_TIMER_MS) {
    const handle = setTimeout(fire, ms)
    return () => clearTimeout(handle)
  }
  const sleeper = Effect.runForkWith(fiber.context)(Effect.andThen(clock.sleep(Duration.millis(ms)), Effect.sync(fire)))
  return () => sleeper.interruptUnsafe(fiber.id)
}

/** One hedged race's state, shared by its attempts. */
interface HedgeRace {
  /** The index of the last target it started. */
  reached: number
  /** The indices of the targets started as hedges. */
  readonly hedged: Array<number>
  /** Some attempt answered: the others were (or are being) interrupted as losers. */
  answered: boolean
  answeredBy: number
}
