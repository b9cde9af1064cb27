/**
 * The hedged race of the plan engine (src/routing/execute.ts) when the
 * request itself is interrupted (the caller went away): every attempt in the
 * race is stopped, its scope closed, and a hedge whose time had not come is
 * never started.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { executePlan } from "../../src/routing/execute.ts"
import type { Plan, PlanStep, PlanTarget } from "../../src/routing/plan.ts"
import type { UpstreamError } from "../../src/domain/index.ts"

const target = (id: string, hedgeAfterMs?: number) => ({ id, hedgeAfterMs }) as unknown as PlanTarget
const plan = { name: "smart", schedule: Schedule.recurs(0) } as unknown as Plan
const steps = [{ strategy: "fallback", targets: [target("primary", 100), target("backup")] }] as unknown as ReadonlyArray<PlanStep>

/** Attempts that never answer, and what became of each: started, then stopped. */
const silentAttempts = () => {
  const events: Array<string> = []
  const attempt = ({ target }: { readonly target: PlanTarget }): Effect.Effect<string, UpstreamError> =>
    Effect.suspend(() => {
      events.push(`start ${target.id}`)
      return Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => events.push(`stop ${target.id}`))))
    })
  return { events, attempt }
}

describe("a hedged race interrupted from outside", () => {
  it.effect("after the hedge started: both attempts are stopped before the request ends", () =>
    Effect.gen(function*() {
      const { events, attempt } = silentAttempts()
      const fiber = yield* executePlan(plan, steps, attempt, {}, { discard: () => Effect.void }).pipe(Effect.forkChild)
      yield* TestClock.adjust(150)
      assert.deepStrictEqual(events, ["start primary", "start backup"])
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual([...events].sort(), ["start backup", "start primary", "stop backup", "stop primary"])
    }))

  it.effect("before the hedge's time: the attempt is stopped and no hedge starts afterwards", () =>
    Effect.gen(function*() {
      const { events, attempt } = silentAttempts()
      const fiber = yield* executePlan(plan, steps, attempt, {}, { discard: () => Effect.void }).pipe(Effect.forkChild)
      yield* TestClock.adjust(50)
      yield* Fiber.interrupt(fiber)
      yield* TestClock.adjust(500)
      assert.deepStrictEqual(events, ["start primary", "stop primary"])
    }))
})
