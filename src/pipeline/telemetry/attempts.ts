/**
 * Attempt logging (one line per failed attempt, successes at debug) and the
 * attempt count of the request's log line.
 */
import type { ExecutionObserver } from "../../routing/execute.ts"
import type { RequestContext } from "../context.ts"
import type { JsonLog } from "./log.ts"

export const attemptLogger = (ctx: RequestContext, log: JsonLog): ExecutionObserver => ({
  onAttempt: (info, outcome, durationMs) => {
    ctx.log.attempts = info.attempt
    if (outcome === "ok" && !log.enabled("debug")) return
    log.log(outcome === "ok" ? "debug" : "warn", "attempt", {
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
