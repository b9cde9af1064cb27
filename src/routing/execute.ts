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
 */
import { Effect, Exit } from "effect"
import { dispositionOf } from "../domain/index.ts"
import type { UpstreamError } from "../domain/index.ts"
import type { Plan, PlanStep, PlanTarget } from "./plan.ts"
import { isRetryable } from "./retry.ts"
import { drawWeighted } from "./sampler.ts"

export interface AttemptInfo {
  /** 1-based, counted across the whole request. */
  readonly attempt: number
  readonly target: PlanTarget
}

export interface ExecutionObserver {
  readonly onAttempt?: (info: AttemptInfo, outcome: "ok" | UpstreamError, durationMs: number) => void
}

export const executePlan = <A, R>(
  plan: Plan,
  steps: ReadonlyArray<PlanStep>,
  attempt: (info: AttemptInfo) => Effect.Effect<A, UpstreamError, R>,
  observer: ExecutionObserver = {}
): Effect.Effect<A, UpstreamError, R> =>
  Effect.suspend(() => {
    let count = 0
    let last: UpstreamError | undefined
    const { schedule } = plan
    const { onAttempt } = observer

    const once = (target: PlanTarget): Effect.Effect<A, UpstreamError, R> =>
      Effect.suspend(() => {
        const info: AttemptInfo = { attempt: ++count, target }
        if (onAttempt === undefined) return attempt(info)
        const started = performance.now()
        return attempt(info).pipe(
          Effect.onExit((exit) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit)) onAttempt(info, "ok", performance.now() - started)
              else if (exit.cause.reasons[0]?._tag === "Fail") onAttempt(info, exit.cause.reasons[0].error, performance.now() - started)
            })
          )
        )
      })

    const onTarget = (target: PlanTarget) => Effect.retry(once(target), { schedule, while: isRetryable })

    const run = (stepIndex: number, targets: ReadonlyArray<PlanTarget>, targetIndex: number): Effect.Effect<A, UpstreamError, R> => {
      if (targetIndex >= targets.length) return nextStep(stepIndex + 1)
      return Effect.catch(onTarget(targets[targetIndex]), (error) => {
        last = error
        return dispositionOf(error.reason) === "stop" ? Effect.fail(error) : run(stepIndex, targets, targetIndex + 1)
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
