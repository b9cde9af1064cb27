/**
 * The telemetry of one model request, as the chat and proxy programs compose
 * it from the telemetry stage's pieces: the resolution, guardrail, cache and
 * attempt spans of the application trace, and the request's one GenAI record
 * (the attempt whose outcome the caller got, its timing, and how many
 * attempts it took).
 *
 * With `[telemetry]` and `[genai_telemetry]` both off every wrapper returns
 * its effect as it is and nothing is timed or recorded. Spans are made only
 * in a request the edge traces (`RequestContext.traced`: tracing on and the
 * request sampled); an unsampled one runs its steps bare.
 */
import { Effect, Exit } from "effect"
import type { AttemptInfo } from "../routing/execute.ts"
import type { GatewayError } from "../domain/index.ts"
import type { ChosenPlan } from "./choose-plan.ts"
import type { RequestContext } from "./context.ts"
import { inputViolationError } from "./security/index.ts"
import type { GuardPolicy, Surface } from "./security/index.ts"
import type { AttemptSpanInfo, GenAiCall, GenAiUpstream, TelemetryShape } from "./telemetry/index.ts"
import { annotateResolved, ATTR, inAttemptSpan, inCacheLookupSpan, inGuardrailSpan, inResolveSpan } from "./telemetry/index.ts"

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

type Wrapper = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
const asIs: Wrapper = (effect) => effect

/** What the program knows of the call when it ends; the trace adds the upstream, timing and attempts. */
export type ModelCallOutcome = Omit<GenAiCall, "upstream" | "timing" | "attempts" | "projectId" | "variant" | "plan" | "path">

export class ModelCallTrace {
  /** The request is traced: its steps get spans. */
  private readonly traced: boolean
  /** Spans or a GenAI record: the steps are timed. */
  private readonly active: boolean
  private upstream: GenAiUpstream | undefined
  private attempts = 0
  private path: "fast" | "normalized" | undefined
  private attemptStartedAt: number | undefined
  private responseStartedAt: number | undefined
  private lastEndedAt: number | undefined
  private plan: string | undefined
  private readonly telemetry: TelemetryShape
  private readonly ctx: RequestContext
  private readonly projectId: string

  constructor(telemetry: TelemetryShape, ctx: RequestContext, projectId: string) {
    this.telemetry = telemetry
    this.ctx = ctx
    this.projectId = projectId
    this.traced = ctx.traced === true
    this.active = this.traced || telemetry.genAi.enabled
  }

  /** Model resolution in its span, annotated with the plan (and variant) chosen. */
  resolve<E, R>(model: string, choose: Effect.Effect<ChosenPlan, E, R>): Effect.Effect<ChosenPlan, E, R> {
    if (!this.active) return choose
    if (!this.traced) return Effect.map(choose, (chosen) => this.noteResolved(chosen))
    return inResolveSpan(model, (span) =>
      Effect.map(choose, (chosen) => {
        annotateResolved(span, chosen.plan.name, this.ctx.log.variant)
        return this.noteResolved(chosen)
      }))
  }

  private noteResolved(chosen: ChosenPlan): ChosenPlan {
    this.plan = chosen.plan.name
    return chosen
  }

  /** A guardrail scan in its span; `scan` answers the violation's code, or undefined for a pass. */
  guardrail<V extends string>(direction: "input" | "output", scan: () => V | undefined): Effect.Effect<V | undefined> {
    if (!this.traced) return Effect.sync(scan)
    return inGuardrailSpan(direction, (span) =>
      Effect.sync(() => {
        const violation = scan()
        span.attribute(ATTR.guardrailOutcome, violation ?? "pass")
        return violation
      }))
  }

  /**
   * The project's input guardrail over what the caller sent (`json`, read only
   * when the guardrail is on): a violation is named in the log line and refused
   * with a 400 that names its kind, and without `x-gw-cache`.
   */
  guardInput(guard: GuardPolicy, surface: Surface, json: () => Readonly<Record<string, unknown>>): Effect.Effect<void, GatewayError> {
    if (!guard.enabled) return Effect.void
    return Effect.flatMap(this.guardrail("input", () => guard.scanRequest(surface, json())), (violation) => {
      if (violation === undefined) return Effect.void
      this.ctx.log.guardrail = violation
      // Refused before the cache lookup: the project's `x-gw-cache: miss` would claim a lookup that never happened.
      if (this.ctx.replyHeaders !== undefined) delete this.ctx.replyHeaders["x-gw-cache"]
      return Effect.fail(inputViolationError(violation))
    })
  }

  /** A cache lookup in its span, annotated `hit` or `miss`. */
  cacheLookup<A>(mode: string, lookup: Effect.Effect<A | undefined>): Effect.Effect<A | undefined> {
    if (!this.traced) return lookup
    return inCacheLookupSpan(mode, (span) =>
      Effect.map(lookup, (entry) => {
        span.attribute(ATTR.cacheOutcome, entry === undefined ? "miss" : "hit")
        return entry
      }))
  }

  /**
   * Wraps one attempt: its span (number, provider, model, retry delay, the
   * failure's classification) and the instants the GenAI record needs.
   * `broken` tells whether a stream failed after its head (not a failed attempt).
   */
  attempt(info: AttemptInfo, path: "fast" | "normalized" | undefined, broken: () => string | undefined): Wrapper {
    if (!this.active) return asIs
    const provider = info.target.provider
    const startedAt = performance.now()
    const retryDelayMs = info.attempt > 1 && this.lastEndedAt !== undefined ? startedAt - this.lastEndedAt : undefined
    this.attempts = Math.max(this.attempts, info.attempt)
    const upstream: GenAiUpstream = { providerId: provider.id, kind: provider.kind, origin: provider.origin, model: info.target.model }
    const adopt = (): void => {
      this.upstream = upstream
      this.path = path
      this.attemptStartedAt = startedAt
    }
    // A hedge runs beside the current attempt: the record is about it only once it answered.
    const hedge = info.hedge === "hedge"
    if (!hedge) {
      adopt()
      this.responseStartedAt = undefined
    }
    const adoptAnswer = <A, E, R>(effect: Effect.Effect<A, E, R>) => (hedge ? Effect.tap(effect, () => Effect.sync(adopt)) : effect)
    // Untraced, the GenAI record needs only the instants above.
    if (!this.traced) return hedge ? adoptAnswer : asIs
    const span: AttemptSpanInfo = {
      attempt: info.attempt,
      providerId: provider.id,
      kind: provider.kind,
      origin: provider.origin,
      targetId: info.target.id,
      model: info.target.model,
      path,
      retryDelayMs: hedge ? undefined : retryDelayMs,
      hedge: info.hedge
    }
    return (effect) =>
      inAttemptSpan(span, () => adoptAnswer(effect), (attemptSpan, exit) => {
        this.lastEndedAt = performance.now()
        const error = Exit.isSuccess(exit) ? broken() : undefined
        if (error !== undefined) attemptSpan.attribute(ATTR.errorType, error)
      })
  }

  /** The current attempt's response head arrived. */
  responded(): void {
    if (this.active) this.responseStartedAt = performance.now()
  }

  /**
   * Records the call (GenAI telemetry on, and an attempt was made); never fails.
   * `outcome` is built only then: with GenAI telemetry off a request pays nothing for it.
   */
  record(outcome: () => ModelCallOutcome, firstTokenAt?: number | undefined): Effect.Effect<void> {
    if (!this.telemetry.genAi.enabled || this.upstream === undefined) return Effect.void
    // The outcome is a fresh object of the caller's: completed in place rather than copied.
    const call = outcome() as Mutable<GenAiCall>
    call.upstream = this.upstream
    call.timing = {
      startedAt: this.ctx.startedAt,
      attemptStartedAt: this.attemptStartedAt,
      responseStartedAt: this.responseStartedAt,
      firstTokenAt,
      endedAt: performance.now()
    }
    call.attempts = this.attempts
    call.path = this.path
    call.plan = this.plan
    call.variant = this.ctx.log.variant
    call.projectId = this.projectId
    return this.telemetry.recordModelCall(call, this.ctx.exportCredential, this.ctx.traceParent)
  }
}

/** The classification of an attempt failure, for the GenAI record's `error.type`. */
export const failureOf = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  if (reason?._tag !== "Fail") return Exit.hasInterrupts(exit) ? "cancelled" : "internal"
  const error = reason.error as { readonly reason?: unknown; readonly code?: unknown }
  return typeof error.reason === "string" ? error.reason : typeof error.code === "string" ? error.code : "error"
}
