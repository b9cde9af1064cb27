/**
 * Attempt logging: every attempt gets a line (failures at warn, the success
 * at info after a failure, a first-try success at debug since the request
 * line tells it all), and the request line counts them.
 */
import type { ExecutionObserver } from "../../routing/execute.ts"
import type { RequestContext } from "../context.ts"
import type { JsonLog } from "./log.ts"

export const attemptLogger = (ctx: RequestContext, log: JsonLog): ExecutionObserver => ({
  onAttempt: (info, outcome, durationMs) => {
    ctx.log.attempts = info.attempt
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
      status: outcome === "ok" ? undefined : outcome.upstreamStatus,
      duration_ms: Math.round(durationMs * 1000) / 1000
    })
  }
})
