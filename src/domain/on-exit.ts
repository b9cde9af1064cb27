/**
 * Exit hooks that cost the runtime nothing when they have nothing left to run.
 *
 * `Effect.onExit(self, f)` runs what `f` returns and then the exit: two or three runtime steps
 * (a `flatMap`, the returned effect, the exit again), even when `f` did its work in place and
 * returned `Effect.void`, which nearly every hook of the request path does. Effect's primitive
 * under `onExit` takes `undefined` from `f` as "nothing to run" and goes on with the exit at once
 * (`OnExitImpl` in effect/src/internal/effect.ts: `eff ? flatMap(eff, () => exit) : exit`, which
 * its own `onExitUnsafe` relies on); `onExitInPlace` types that. As with `onExit`, the hook runs
 * uninterruptibly, and what it returns runs before the exit goes on. test/domain/on-exit.test.ts
 * holds the runtime to it.
 */
import { Effect, Exit } from "effect"

export const onExitInPlace = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  f: (exit: Exit.Exit<A, E>) => Effect.Effect<void> | undefined
): Effect.Effect<A, E, R> => Effect.onExit(self, f as (exit: Exit.Exit<A, E>) => Effect.Effect<void>)

/** `effect`, or undefined when it is already a success (a finalizer that returned `Effect.void`): nothing left to run. */
export const nothingLeft = (effect: Effect.Effect<unknown> | undefined): Effect.Effect<void> | undefined =>
  // Its value is never read (the hook's exit goes on): the effect as it is, no step to discard the value.
  effect === undefined || (Exit.isExit(effect) && Exit.isSuccess(effect)) ? undefined : (effect as Effect.Effect<void>)
