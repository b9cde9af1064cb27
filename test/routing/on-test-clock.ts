/**
 * A request to `smart` on virtual time: sent in a fiber of its own, the
 * `TestClock` moved on, then joined (what the `ttft_ms` and hedging tests do
 * to watch slow upstreams without waiting), and the TOML of `smart`.
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

/** Where a test puts its settings (TOML lines under that table), and the shape of `smart`. */
export interface SmartLayout {
  readonly primary?: string
  readonly route?: string
  /** `routes` (default) or `functions`. */
  readonly table?: "routes" | "functions"
  readonly targets?: string
  readonly retries?: number
}

/** The TOML of `smart`: a fallback route (or function) over `targets` unless the layout names its own. */
export const smartTable = (layout: SmartLayout, targets: string): string => {
  const table = layout.table ?? "routes"
  return `
[${table}.smart]
endpoint = "chat"
${table === "routes" ? "models = [\"smart\"]" : ""}
strategy = "fallback"
${layout.targets ?? `targets = ${targets}`}
${layout.route ?? ""}

[${table}.smart.retry]
max_retries = ${layout.retries ?? 0}
backoff_base_ms = 100
`
}
