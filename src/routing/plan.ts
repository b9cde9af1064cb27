/**
 * Plans: every request's path through the providers, as data. Compiled once
 * per configuration (static TOML or tenant snapshot) and looked up per
 * request; the engine (`execute.ts`) runs them.
 *
 * A plan is an ordered list of steps run as a fallback chain; a step is a
 * strategy over targets. An experiment function is a set of weighted
 * variants, each a plan of its own plus parameter overrides.
 */
import type { Schedule } from "effect"
import type { EndpointType } from "../config/index.ts"
import type { CallerFormat, UpstreamError } from "../domain/index.ts"
import type { CompiledProvider } from "../providers/adapter.ts"

export interface PlanTarget {
  /** Target id, or `provider::model` for a target implied by a model name. */
  readonly id: string
  /** The provider, compiled with this target's credential when it has one. */
  readonly provider: CompiledProvider
  /** Model name the provider knows. */
  readonly model: string
  readonly weight: number
  /** Per attempt: target → model → provider → `[defaults.provider]` → 30000 ms. */
  readonly timeoutMs: number
  /**
   * How long a streamed attempt may go without content before it fails as a
   * timeout (before the commit): target → step → route or function → model →
   * provider → `[defaults.provider]`; undefined (off) when none sets it.
   */
  readonly ttftMs?: number | undefined
  /**
   * Hedging: with no content (a non-streamed attempt: no whole answer) this
   * many ms after the target's start, the step's next target is started beside
   * it and the first to answer wins: target → step → route or function;
   * undefined (off) when none sets it.
   */
  readonly hedgeAfterMs?: number | undefined
  /** The most hedges a request may start while this target runs (`max_hedges`, default 1). */
  readonly maxHedges?: number | undefined
  /**
   * `on_stream_break = "continue"`: a committed stream of this target that
   * breaks is continued on another target of the plan (target → step → route
   * or function); undefined for the default, the error frame.
   */
  readonly continueOnBreak?: true | undefined
  /** `[models.<name>] max_tokens`, for messages-style upstreams that require it. */
  readonly maxTokens?: number | undefined
}

export type Strategy = "single" | "weighted" | "fallback"

export interface PlanStep {
  readonly strategy: Strategy
  readonly targets: ReadonlyArray<PlanTarget>
}

/** Facts about a list of steps that no request changes, computed when the steps are compiled. */
export interface StepsShape {
  /** Some target's provider is not a chat family (it may not serve chat at all). */
  readonly hasNonChat: boolean
  /** Per caller format: whether every target speaks it natively (no attempt needs the canonical request). */
  readonly allNative: Readonly<Record<CallerFormat, boolean>>
}

export interface RetryPolicy {
  readonly maxRetries: number
  readonly backoffBaseMs: number
}

export interface Variant {
  readonly name: string
  readonly weight: number
  readonly steps: ReadonlyArray<PlanStep>
  readonly shape: StepsShape
  /** Request parameters the variant overrides (wire names). */
  readonly overrides: Readonly<Record<string, unknown>>
}

export interface Plan {
  /** What the caller asked for, resolved: `route::smart`, `openai::gpt-4o`, `function::summarize`. */
  readonly name: string
  /** Endpoint type of a route or function; undefined for a provider model (any endpoint). */
  readonly endpoint?: EndpointType | undefined
  readonly steps: ReadonlyArray<PlanStep>
  readonly shape: StepsShape
  readonly retry: RetryPolicy
  /** `retry` as the Effect schedule every attempt runs under, built with the plan. */
  readonly schedule: Schedule.Schedule<number, UpstreamError>
  /** Experiment functions: one variant is drawn per request (then its steps run). */
  readonly variants?: ReadonlyArray<Variant> | undefined
}

