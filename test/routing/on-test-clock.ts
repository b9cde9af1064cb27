/**
 * A request to `smart` on virtual time: sent in a fiber of its own, the
 * `TestClock` moved on, then joined (what the `ttft_ms` and hedging tests do
 * to watch slow upstreams without waiting).
 */
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { scriptedProviders, sendRequest } from "../../src/testing.ts"
import type { RoutingUnderTest, TestReply, UpstreamCall } from "../../src/testing.ts"

/** Sends a request to `smart` (streamed unless `stream` is false), moves the clock `advance` ms on, and joins it. */
export const sendAfter = (routing: RoutingUnderTest, handler: (call: UpstreamCall) => TestReply, advance: number, stream = true) =>
  Effect.gen(function*() {
    const fiber = yield* sendRequest(routing, { model: "smart", stream }).pipe(Effect.provide(scriptedProviders(handler)), Effect.forkChild)
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(fiber)
  })
