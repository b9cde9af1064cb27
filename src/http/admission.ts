/**
 * Admission of a model request by the limits stage, once its body is read
 * and before its program runs: the request's gateway key (when it has
 * limits) is counted, and the request is refused with a 429 in the caller's
 * format when over one. Settled by the edge when the request ends, with the
 * tokens its log line reports.
 *
 * Details
 * - The token estimate reserved is the body's size in tokens (4 bytes each)
 *   plus its output limit (`max_tokens`, `max_completion_tokens`,
 *   `max_output_tokens`), when it has one.
 * - The `x-ratelimit-*` headers go on every answer of an admitted request, and
 *   with `retry-after` on the refusal.
 * - At the end: the tokens used when the answer reported them; none when the
 *   request failed without a usage; else the reservation stands.
 * - With no key limited (`Limits.layerOff`) there is no admission at all: the
 *   handlers get `undefined` and call nothing.
 */
import { Effect } from "effect"
import type { GatewayError, InfraError } from "../domain/index.ts"
import type { LimitsShape, RequestContext } from "../pipeline/index.ts"

export type Admit = (ctx: RequestContext, json: Readonly<Record<string, unknown>>, bodyBytes: number) => Effect.Effect<void, GatewayError | InfraError>

const BYTES_PER_TOKEN = 4

const outputLimitOf = (json: Readonly<Record<string, unknown>>): number => {
  const limit = json.max_tokens ?? json.max_completion_tokens ?? json.max_output_tokens
  return typeof limit === "number" && Number.isFinite(limit) && limit > 0 ? limit : 0
}

/** The tokens a request is expected to use: its input by size, and its output limit. */
export const tokenEstimate = (json: Readonly<Record<string, unknown>>, bodyBytes: number): number =>
  Math.ceil(bodyBytes / BYTES_PER_TOKEN) + outputLimitOf(json)

/** What the request used, from its log line (at its end). */
const tokensUsed = (ctx: RequestContext): number | undefined => {
  const { input_tokens, output_tokens } = ctx.log
  if (input_tokens !== undefined) return input_tokens + (output_tokens ?? 0)
  return ctx.res.statusCode >= 400 ? 0 : undefined
}

const addHeaders = (ctx: RequestContext, headers: Readonly<Record<string, string>>): void => {
  const into = (ctx.replyHeaders ??= {})
  for (const name in headers) into[name] = headers[name]
}

/** The admission of the gateway's limits; undefined when nothing is limited. */
export const makeAdmit = (limits: LimitsShape): Admit | undefined => {
  if (!limits.enabled) return undefined
  return (ctx, json, bodyBytes) => {
    const subject = ctx.callerKey?.subject
    if (subject === undefined) return Effect.void
    return Effect.flatMap(limits.admit(subject, tokenEstimate(json, bodyBytes)), (admission) => {
      if (admission._tag === "Refused") {
        addHeaders(ctx, admission.headers)
        ctx.log.limits = "refused"
        return Effect.fail(admission.error)
      }
      if (admission.headers === undefined) {
        ctx.log.limits = "uncounted"
        return Effect.void
      }
      addHeaders(ctx, admission.headers)
      ctx.settle = () => admission.settle({ tokens: tokensUsed(ctx), costUsd: ctx.log.cost_usd, cancel: false })
      return Effect.void
    })
  }
}
