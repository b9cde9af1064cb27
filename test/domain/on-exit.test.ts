/**
 * `onExitInPlace` leans on Effect's exit hook taking `undefined` as "nothing
 * to run" (src/domain/on-exit.ts): these hold the runtime to it, so that an
 * Effect upgrade that changes it fails here and not in a request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { nothingLeft, onExitInPlace } from "../../src/domain/index.ts"

describe("onExitInPlace", () => {
  it.effect("a hook returning undefined sees the exit, and the value or failure goes on unchanged", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const value = yield* onExitInPlace(Effect.succeed(41), (exit) => {
        seen.push(Exit.isSuccess(exit) ? `ok ${exit.value}` : "failed")
        return undefined
      })
      assert.strictEqual(value, 41)
      const failed = yield* Effect.exit(onExitInPlace(Effect.fail("boom"), (exit) => {
        seen.push(Exit.isFailure(exit) ? `failed ${String(Cause.squash(exit.cause))}` : "ok")
        return undefined
      }))
      assert.deepStrictEqual(failed, Exit.fail("boom"))
      assert.deepStrictEqual(seen, ["ok 41", "failed boom"])
    }))

  it.effect("an effect the hook returns runs before the exit goes on, and its failure is the program's", () =>
    Effect.gen(function*() {
      const order: Array<string> = []
      const value = yield* onExitInPlace(Effect.sync(() => order.push("program")), () => Effect.sync(() => void order.push("hook effect")))
      order.push(`after ${value}`)
      assert.deepStrictEqual(order, ["program", "hook effect", "after 1"])
      const exit = yield* Effect.exit(onExitInPlace(Effect.succeed(1), () => Effect.die("finalizer broke")))
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
    }))

  it.live("the hook runs when the program is interrupted, and what it returns runs uninterruptibly", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const fiber = yield* onExitInPlace(Effect.never, (exit) => {
        seen.push(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "other")
        // An interruptible wait would end at once in a fiber being interrupted.
        return Effect.andThen(Effect.sleep("20 millis"), Effect.sync(() => void seen.push("hook effect done")))
      }).pipe(Effect.forkChild)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(seen, ["interrupted", "hook effect done"])
    }), { timeout: 5_000 })

  it("nothingLeft: a success already had (a finalizer's Effect.void) is nothing to run; anything else is kept", () => {
    assert.isUndefined(nothingLeft(undefined))
    assert.isUndefined(nothingLeft(Effect.void))
    assert.isUndefined(nothingLeft(Exit.succeed(3)))
    const failure = Exit.die("x")
    assert.strictEqual(nothingLeft(failure), failure)
    const later = Effect.sync(() => 1)
    assert.strictEqual(nothingLeft(later), later)
  })
})
