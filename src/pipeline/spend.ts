/**
 * What a request's attempts cost: each attempt's usage priced at the model
 * its target sent to (`[models]` prices over the shipped table), summed over
 * every attempt of the request (retries and fallbacks included). Noted, once
 * the attempts are over, on the log line (`cost_usd`), the GenAI span and, for
 * an answer whose head is still to be written, `x-gw-cost-usd`.
 *
 * A request none of whose attempts had both a usage and a price has no cost
 * (nothing is noted), rather than a guessed one.
 */
import { costOf, roundCost } from "../config/index.ts"
import type { ModelPrice } from "../config/index.ts"
import type { Usage } from "../domain/index.ts"
import type { RequestContext } from "./context.ts"

export class Spend {
  private usd = 0
  private priced = false
  /** The model of the attempt under way (priced when it ends). */
  private current: string | undefined
  /**
   * What of the attempt's usage is priced already: a continued stream's
   * collector sums its upstream calls, and the calls before the latest
   * continuation were priced at their own model (`continueAt`).
   */
  private counted: Usage | undefined

  private readonly priceOf: (model: string) => ModelPrice | undefined

  constructor(priceOf: (model: string) => ModelPrice | undefined) {
    this.priceOf = priceOf
  }

  /**
   * An attempt starts at `model`; the one before it, if any, ended with
   * `previous` (its collector's usage). Priced here rather than by a
   * finalizer per attempt: nothing is added to an attempt's effect.
   */
  begin(model: string, previous: Usage | undefined): void {
    if (this.current !== undefined) this.add(this.current, beyond(previous, this.counted))
    this.current = model
    this.counted = undefined
  }

  /**
   * A broken stream is continued at `model` (`on_stream_break`): its calls so
   * far, which reported `summed`, are priced at the model they ran at; the
   * continuation's own usage is priced at `model` when it ends.
   */
  continueAt(model: string, summed: Usage | undefined): void {
    if (this.current !== undefined) this.add(this.current, beyond(summed, this.counted))
    this.current = model
    if (summed !== undefined) this.counted = summed
  }

  /** The attempts are over; the last one ended with `usage`. */
  end(usage: Usage | undefined): void {
    if (this.current !== undefined) this.add(this.current, beyond(usage, this.counted))
    this.current = undefined
    this.counted = undefined
  }

  /**
   * Adds one attempt's usage at `model`'s price (nothing when either is
   * unknown): an attempt that ran beside the current one (a hedged race's)
   * is priced by this when it ends.
   */
  add(model: string, usage: Usage | undefined): void {
    if (usage === undefined) return
    const price = this.priceOf(model)
    if (price === undefined) return
    this.usd += costOf(price, usage)
    this.priced = true
  }

  /** The request's cost so far (USD, rounded); undefined when nothing was priced. */
  get costUsd(): number | undefined {
    return this.priced ? roundCost(this.usd) : undefined
  }

  /** Notes the cost on the log line and the answer's headers (a head already written keeps its own: the writer reads them once). */
  note(ctx: RequestContext): void {
    const cost = this.costUsd
    if (cost === undefined) return
    ctx.log.cost_usd = cost
    ;(ctx.replyHeaders ??= {})["x-gw-cost-usd"] = String(cost)
  }
}

/** `usage` less what was priced already (`counted`, an earlier sum of the same calls). */
const beyond = (usage: Usage | undefined, counted: Usage | undefined): Usage | undefined => {
  if (usage === undefined || counted === undefined) return usage
  const less = (a: number | undefined, b: number | undefined) => (a === undefined ? undefined : Math.max(0, a - (b ?? 0)))
  return {
    inputTokens: Math.max(0, usage.inputTokens - counted.inputTokens),
    outputTokens: Math.max(0, usage.outputTokens - counted.outputTokens),
    cacheReadTokens: less(usage.cacheReadTokens, counted.cacheReadTokens),
    cacheWriteTokens: less(usage.cacheWriteTokens, counted.cacheWriteTokens),
    reasoningTokens: less(usage.reasoningTokens, counted.reasoningTokens)
  }
}
