/**
 * One attempt's upstream call, bounded by the target's timeout (spec 2.7
 * resolution order, compiled into `PlanTarget.timeoutMs`). The bound covers
 * the wait for the response head; the transport bounds every later gap.
 * Uses Effect's clock, so tests drive it with `TestClock`.
 */
import { Effect } from "effect"
import { UpstreamError } from "../domain/index.ts"
import type { ProviderClient, UpstreamCall, UpstreamResponse } from "../providers/transport.ts"
import type { PlanTarget } from "./plan.ts"

export const timeoutError = (target: PlanTarget): UpstreamError =>
  new UpstreamError({
    reason: "upstream",
    upstreamStatus: 0,
    provider: target.provider.id,
    family: target.provider.family,
    message: `no response within ${target.timeoutMs} ms`,
    timedOut: true,
    reached: true,
    retryAfter: undefined
  })

export const sendWithin = (
  client: ProviderClient["Service"],
  call: UpstreamCall,
  target: PlanTarget
): Effect.Effect<UpstreamResponse, UpstreamError> =>
  client.send(call).pipe(
    Effect.timeoutOrElse({ duration: target.timeoutMs, orElse: () => Effect.fail(timeoutError(target)) })
  )
