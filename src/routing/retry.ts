/**
 * The retry policy as an Effect `Schedule` (docs/reference/gateway-spec.md §2.7 retry tables, docs/reference/DESIGN.md
 * "Plans"): at most `max_retries` retries, exponential from `backoff_base_ms`
 * (×2 each time) with full jitter, an upstream `Retry-After` honoured up to
 * 30 s. Which failures are retried at all is `isRetryable`.
 */
import { Duration, Effect, Random, Schedule } from "effect"
import { dispositionOf } from "../domain/index.ts"
import type { UpstreamError } from "../domain/index.ts"
import type { RetryPolicy } from "./plan.ts"

export const RETRY_AFTER_CAP_MS = 30_000

/** Rate limits, overload and 5xx/network/timeouts are retried on the same target. */
export const isRetryable = (error: UpstreamError): boolean => dispositionOf(error.reason) === "retry"

/**
 * The wait before retry number `retry` (1-based): the upstream's Retry-After
 * when it sent one (capped), else a uniform draw in [0, base × 2^(retry-1)].
 */
export const backoffDelayMs = (policy: RetryPolicy, retry: number, retryAfterMs: number | undefined, draw: number): number =>
  retryAfterMs !== undefined
    ? Math.min(retryAfterMs, RETRY_AFTER_CAP_MS)
    : Math.floor(draw * policy.backoffBaseMs * 2 ** (retry - 1))

export const retrySchedule = (policy: RetryPolicy): Schedule.Schedule<number, UpstreamError> =>
  Schedule.recurs(policy.maxRetries).pipe(
    Schedule.setInputType<UpstreamError>(),
    Schedule.modifyDelay((metadata) =>
      Effect.map(Random.next, (draw) => Duration.millis(backoffDelayMs(policy, metadata.attempt, metadata.input.retryAfterMs, draw)))
    )
  )
