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
 *
 * A hedged race (`hedge_after_ms`) adds a line for its loser (`outcome:
 * "lost"`, the attempt interrupted when the other answered), marks its
 * attempts `hedge: primary | hedge`, and notes each hedge on the request line
 * (`hedges`: target, provider, model, won or lost), which the metrics count.
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
  return {
    onAttempt: (info, outcome, durationMs) => {
      // Attempts of a hedged race end in any order: the count is the highest number seen.
      ctx.log.attempts = info.hedge === undefined ? info.attempt : Math.max(ctx.log.attempts ?? 0, info.attempt)
      // An attempt after another is a retry of the same target or a failover to the next; the attempts
      // of a hedged race end in any order, so they count as neither (its hedges are counted instead).
      if (previous !== undefined && info.hedge === undefined) {
        if (previous === info.target.id) ctx.log.retries = (ctx.log.retries ?? 0) + 1
        else ctx.log.failovers = (ctx.log.failovers ?? 0) + 1
      }
      previous = info.target.id
      // A failed attempt is a warning; the one that succeeded is news only after a failure
      // (a first-try success is fully told by the request line), a hedged race's loser at info.
      const level = outcome === "ok" ? (info.attempt > 1 ? "info" : "debug") : outcome === "lost" ? "info" : "warn"
      if (!log.enabled(level)) return
      log.log(level, "attempt", {
        request_id: ctx.requestId,
        attempt: info.attempt,
        target: info.target.id,
        provider: info.target.provider.id,
        outcome: typeof outcome === "string" ? outcome : outcome.reason,
        ...(info.hedge === undefined ? {} : { hedge: info.hedge }),
        ...(typeof outcome === "string" ? {} : failureFields(outcome)),
        duration_ms: Math.round(durationMs * 1000) / 1000
      })
    },
    onHedge: (target, outcome) => {
      ;(ctx.log.hedges ??= []).push({ target: target.id, provider: target.provider.id, model: target.model, outcome })
    }
  }
}
