/**
 * Attempt logging: every attempt gets a line (failures at warn, the success
 * at info after a failure, a first-try success at debug since the request
 * line tells it all), and the request line counts them.
 *
 * A failed attempt's line says why, so the reason is in the log even with
 * telemetry off: the network error code, which timeout ran out (`head`: no
 * response; `idle`: a gap between two chunks; `first_token`: no content
 * within `ttft_ms`), or the upstream's status with
 * its error type. Never a body, an upstream's message or a secret.
 */
import type { UpstreamError } from "../domain/index.ts"
import type { ExecutionObserver } from "../routing/execute.ts"
import type { RequestContext } from "./context.ts"
import type { JsonLog } from "../infra/log.ts"

/** The log fields that say why an attempt failed. */
const failureFields = (error: UpstreamError) => {
  if (error.timeout !== undefined) return { timeout: error.timeout }
  if (error.networkCode !== undefined) return { network_error: error.networkCode }
  const status = error.upstreamStatus === 0 ? undefined : error.upstreamStatus
  // Only an error response keeps its body; a fault without one is described in the gateway's own words.
  if (error.body === undefined) return { status, problem: error.message }
  return { status, error_type: error.upstreamType, in_stream: error.inStream }
}

export const attemptLogger = (ctx: RequestContext, log: JsonLog): ExecutionObserver => {
  let previous: string | undefined
  return { onAttempt: (info, outcome, durationMs) => {
    ctx.log.attempts = info.attempt
    // An attempt after another is a retry of the same target or a failover to the next.
    if (previous !== undefined) {
      if (previous === info.target.id) ctx.log.retries = (ctx.log.retries ?? 0) + 1
      else ctx.log.failovers = (ctx.log.failovers ?? 0) + 1
    }
    previous = info.target.id
    // A failed attempt is a warning; the one that succeeded is news only after a failure
    // (a first-try success is fully told by the request line).
    const level = outcome !== "ok" ? "warn" : info.attempt > 1 ? "info" : "debug"
    if (!log.enabled(level)) return
    log.log(level, "attempt", {
      request_id: ctx.requestId,
      attempt: info.attempt,
      target: info.target.id,
      provider: info.target.provider.id,
      outcome: outcome === "ok" ? "ok" : outcome.reason,
      ...(outcome === "ok" ? {} : failureFields(outcome)),
      duration_ms: Math.round(durationMs * 1000) / 1000
    })
  } }
}
