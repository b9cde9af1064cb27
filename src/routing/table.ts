/**
 * Model resolution (docs/reference/gateway-spec.md §4.1, docs/reference/DESIGN.md "Model resolution") over a routing
 * table compiled once from the configuration: every selector a caller may
 * send (`route::X`, `function::X`, `<provider>::<model>`, plain names) maps to
 * its plan in one lookup.
 */
import { Result } from "effect"
import type { EndpointType, GatewaySettings, ResolvedCredential, ResolvedProvider, ResolvedTarget } from "../config/index.ts"
import { DEFAULT_TIMEOUT_MS, resolveModelReference, variantParameters } from "../config/index.ts"
import { clip, GatewayError } from "../domain/index.ts"
import type { CompiledProvider } from "../providers/adapter.ts"
import type { Plan, PlanStep, PlanTarget, RetryPolicy, Strategy, Variant } from "./plan.ts"
import { retrySchedule } from "./retry.ts"
import { shapeOf } from "./servable.ts"

/** `hedge_after_ms` and `max_hedges` as a step, route or function sets them. */
interface HedgeSettings {
  readonly hedge_after_ms?: number | undefined
  readonly max_hedges?: number | undefined
}

/** A plain name matched by several entries: resolution fails with 409 naming them. */
interface Ambiguous {
  readonly ambiguous: ReadonlyArray<string>
}

type Entry = Plan | Ambiguous

/**
 * What a request asks for: an endpoint type of docs/reference/gateway-spec.md §2.7, or an operation that
 * only provider models serve (routes and functions have no such endpoint type).
 */
export type RequestEndpoint = EndpointType | "rerank" | "count_tokens"

const isAmbiguous = (entry: Entry): entry is Ambiguous => "ambiguous" in entry

export interface RoutingTable {
  /**
   * The plan for a request's `model`, honouring `x-genai-provider` and the
   * endpoint type. Fails with the gateway errors of docs/reference/gateway-spec.md §7.1 (404, 409, 400).
   */
  readonly resolve: (model: string, providerHeader: string | undefined, endpoint: RequestEndpoint) => Result.Result<Plan, GatewayError>
  readonly providers: ReadonlyMap<string, CompiledProvider>
}

const notFound = (model: string) =>
  Result.fail(new GatewayError({ status: 404, code: "model_not_found", message: `The model \`${clip(model)}\` does not exist or is not configured`, param: "model" }))

/** Compiles a provider (optionally with a target's own credential); the live one is `compileProvider`. */
export type ProviderCompiler = (provider: ResolvedProvider, credential?: ResolvedCredential) => CompiledProvider

/**
 * Compiles every selector of a configuration into its plan. The provider
 * compiler is passed in, so routing depends on the adapters' shape only.
 */
export const compileRoutingTable = (settings: GatewaySettings, compileProvider: ProviderCompiler): RoutingTable => {
  const { file } = settings
  const providers = new Map<string, CompiledProvider>()
  for (const provider of settings.providers.values()) providers.set(provider.id, compileProvider(provider))

  const timeoutFor = (provider: ResolvedProvider, model: string, targetTimeout?: number): number =>
    targetTimeout ?? file.models[model]?.timeout_ms ?? provider.timeoutMs ?? file.defaults.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS
  /** `ttft_ms` below the target, step and route: the model's, the provider's, `[defaults.provider]`'s, or none. */
  const ttftFor = (provider: ResolvedProvider, model: string): number | undefined =>
    file.models[model]?.ttft_ms ?? provider.ttftMs ?? file.defaults.provider.ttft_ms

  const modelTarget = (provider: ResolvedProvider, model: string): PlanTarget => ({
    id: `${provider.id}::${model}`,
    provider: providers.get(provider.id)!,
    model,
    weight: 1,
    timeoutMs: timeoutFor(provider, model),
    ttftMs: ttftFor(provider, model),
    maxTokens: file.models[model]?.max_tokens
  })

  const compiledTargets = new Map<string, PlanTarget>()
  const targetById = (id: string): PlanTarget => {
    const existing = compiledTargets.get(id)
    if (existing !== undefined) return existing
    const target = settings.targets.get(id) as ResolvedTarget
    const provider = settings.providers.get(target.providerId)!
    const compiled: PlanTarget = {
      id,
      provider: target.credential === undefined ? providers.get(provider.id)! : compileProvider(provider, target.credential),
      model: target.model,
      weight: target.weight,
      timeoutMs: timeoutFor(provider, target.model, target.timeoutMs),
      ttftMs: target.ttftMs ?? ttftFor(provider, target.model),
      continueOnBreak: target.onStreamBreak === "continue" ? true : undefined,
      maxTokens: file.models[target.model]?.max_tokens
    }
    compiledTargets.set(id, compiled)
    return compiled
  }

  /**
   * A step's, route's or function's `ttft_ms` (`scoped`) over a target that
   * sets none itself: it wins over the model's, provider's and defaults' value.
   */
  const withTtft = (target: PlanTarget, scoped: number | undefined): PlanTarget =>
    scoped === undefined || settings.targets.get(target.id)?.ttftMs !== undefined || target.ttftMs === scoped ? target : { ...target, ttftMs: scoped }

  /**
   * A step's, route's or function's `hedge_after_ms` and `max_hedges` over a
   * target: each value the target does not set itself. Nothing set anywhere:
   * the target as it is (no hedging).
   */
  const withHedge = (target: PlanTarget, scoped: HedgeSettings | undefined): PlanTarget => {
    const own = settings.targets.get(target.id)
    const hedgeAfterMs = own?.hedgeAfterMs ?? scoped?.hedge_after_ms
    if (hedgeAfterMs === undefined) return target
    const maxHedges = own?.maxHedges ?? scoped?.max_hedges ?? 1
    return target.hedgeAfterMs === hedgeAfterMs && target.maxHedges === maxHedges ? target : { ...target, hedgeAfterMs, maxHedges }
  }
  /** The more specific of two hedge settings, field by field (a step's over its route's). */
  const innerHedge = (inner: HedgeSettings, outer: HedgeSettings): HedgeSettings => ({
    hedge_after_ms: inner.hedge_after_ms ?? outer.hedge_after_ms,
    max_hedges: inner.max_hedges ?? outer.max_hedges
  })
  /** A step's, route's or function's `on_stream_break` (`scoped`) over a target that sets none itself. */
  const withStreamBreak = (target: PlanTarget, scoped: "error" | "continue" | undefined): PlanTarget => {
    if (scoped === undefined || settings.targets.get(target.id)?.onStreamBreak !== undefined) return target
    const continueOnBreak = scoped === "continue" ? true : undefined
    return target.continueOnBreak === continueOnBreak ? target : { ...target, continueOnBreak }
  }
  /** The scoped settings of a step, route or function over one of its targets. */
  const scopedTo = (target: PlanTarget, scoped: { readonly ttft_ms?: number; readonly on_stream_break?: "error" | "continue" } & HedgeSettings): PlanTarget =>
    withHedge(withStreamBreak(withTtft(target, scoped.ttft_ms), scoped.on_stream_break), scoped)

  const modelRef = (reference: string): PlanTarget => {
    // The configuration's checks resolved every reference before anything is compiled.
    const resolved = Result.getOrThrowWith(resolveModelReference(reference, settings.providers), () => new Error(`unchecked model reference ${reference}`))
    return modelTarget(settings.providers.get(resolved.providerId)!, resolved.model)
  }

  const retryOf = (table?: { readonly max_retries: number; readonly backoff_base_ms: number }): RetryPolicy => {
    const source = table ?? file.routing.retry
    return { maxRetries: source.max_retries, backoffBaseMs: source.backoff_base_ms }
  }
  /** A plan compiled with what every request reads of it: its steps' shape and its retry schedule. */
  const planOf = (name: string, endpoint: EndpointType | undefined, steps: ReadonlyArray<PlanStep>, retry: RetryPolicy, variants?: ReadonlyArray<Variant>): Plan => ({
    name,
    endpoint,
    steps,
    shape: shapeOf(steps),
    retry,
    schedule: retrySchedule(retry),
    variants
  })

  const stepsOf = (
    strategy: Strategy,
    targets: ReadonlyArray<string> | undefined,
    steps: ReadonlyArray<{ readonly strategy: Strategy; readonly targets: ReadonlyArray<string>; readonly ttft_ms?: number; readonly on_stream_break?: "error" | "continue" } & HedgeSettings> | undefined,
    scoped: { readonly ttft_ms?: number; readonly on_stream_break?: "error" | "continue" } & HedgeSettings
  ): ReadonlyArray<PlanStep> =>
    steps !== undefined
      ? steps.map((step) => ({
        strategy: step.strategy,
        targets: step.targets.map((id) =>
          scopedTo(targetById(id), {
            ...innerHedge(step, scoped),
            ttft_ms: step.ttft_ms ?? scoped.ttft_ms,
            on_stream_break: step.on_stream_break ?? scoped.on_stream_break
          })
        )
      }))
      : [{ strategy, targets: (targets ?? []).map((id) => scopedTo(targetById(id), scoped)) }]

  const routePlans = new Map<string, Plan>()
  for (const [id, route] of Object.entries(file.routes)) {
    routePlans.set(id, planOf(`route::${id}`, route.endpoint, stepsOf(route.strategy, route.targets, route.steps, route), retryOf(route.retry)))
  }

  const functionPlans = new Map<string, Plan>()
  for (const [name, fn] of Object.entries(file.functions)) {
    const retry = retryOf(fn.retry)
    if (fn.strategy === "experiment") {
      const variants: Array<Variant> = Object.entries(fn.variants ?? {}).map(([variantName, variant]) => {
        const steps: ReadonlyArray<PlanStep> = [{
          strategy: "single",
          targets: [scopedTo(variant.target !== undefined ? targetById(variant.target) : modelRef(variant.model!), fn)]
        }]
        return { name: variantName, weight: variant.weight, steps, shape: shapeOf(steps), overrides: variantParameters(variant) }
      })
      functionPlans.set(name, planOf(`function::${name}`, fn.endpoint, [], retry, variants))
      continue
    }
    const steps = fn.models !== undefined
      ? [{ strategy: fn.strategy, targets: fn.models.map((model) => scopedTo(modelRef(model), fn)) }]
      : stepsOf(fn.strategy, fn.targets, fn.steps, fn)
    functionPlans.set(name, planOf(`function::${name}`, fn.endpoint, steps, retry))
  }

  const defaultRetry = retryOf()
  const defaultSchedule = retrySchedule(defaultRetry)
  const providerPlan = (provider: ResolvedProvider, model: string): Plan => {
    const steps: ReadonlyArray<PlanStep> = [{ strategy: "single", targets: [modelTarget(provider, model)] }]
    return { name: `${provider.id}::${model}`, endpoint: undefined, steps, shape: shapeOf(steps), retry: defaultRetry, schedule: defaultSchedule }
  }

  // Every selector, resolved once.
  const explicit = new Map<string, Plan>()
  for (const [id, plan] of routePlans) explicit.set(`route::${id}`, plan)
  for (const [name, plan] of functionPlans) explicit.set(`function::${name}`, plan)
  for (const provider of settings.providers.values()) {
    for (const model of provider.models) explicit.set(`${provider.id}::${model}`, providerPlan(provider, model))
  }

  const plain = new Map<string, Entry>()
  const routeOwners = new Map<string, Array<string>>()
  for (const [id, route] of Object.entries(file.routes)) {
    for (const model of route.models) routeOwners.set(model, [...(routeOwners.get(model) ?? []), id])
  }
  for (const [model, owners] of routeOwners) {
    plain.set(model, owners.length === 1 ? routePlans.get(owners[0])! : { ambiguous: owners.map((id) => `route::${id}`) })
  }
  const providerOwners = new Map<string, Array<ResolvedProvider>>()
  for (const provider of settings.providers.values()) {
    for (const model of new Set(provider.models)) providerOwners.set(model, [...(providerOwners.get(model) ?? []), provider])
  }
  for (const [model, owners] of providerOwners) {
    if (plain.has(model)) continue
    plain.set(model, owners.length === 1 ? providerPlan(owners[0], model) : { ambiguous: owners.map((p) => `${p.id}::${model}`) })
  }
  for (const [name, plan] of functionPlans) if (!plain.has(name)) plain.set(name, plan)

  const checkEndpoint = (plan: Plan, endpoint: RequestEndpoint): Result.Result<Plan, GatewayError> => {
    if (plan.endpoint !== undefined && plan.endpoint !== endpoint) {
      return Result.fail(
        new GatewayError({
          status: 400,
          code: "unsupported_for_model",
          message: `${plan.name} serves the ${plan.endpoint} endpoint, not ${endpoint}`,
          param: "model"
        })
      )
    }
    return Result.succeed(plan)
  }

  const resolve = (model: string, providerHeader: string | undefined, endpoint: RequestEndpoint): Result.Result<Plan, GatewayError> => {
    const separator = model.indexOf("::")
    if (providerHeader !== undefined) {
      if (!providers.has(providerHeader)) {
        return Result.fail(
          new GatewayError({ status: 400, code: "invalid_request", message: `x-genai-provider names provider "${clip(providerHeader)}", which is not configured` })
        )
      }
      if (separator > 0) {
        const prefix = model.slice(0, separator)
        if (prefix !== providerHeader) {
          return Result.fail(
            new GatewayError({
              status: 400,
              code: "invalid_request",
              message: `x-genai-provider "${providerHeader}" disagrees with the model prefix "${clip(prefix)}::"`,
              param: "model"
            })
          )
        }
        const plan = explicit.get(model)
        return plan === undefined ? notFound(model) : checkEndpoint(plan, endpoint)
      }
      const plan = explicit.get(`${providerHeader}::${model}`)
      return plan === undefined ? notFound(`${providerHeader}::${model}`) : checkEndpoint(plan, endpoint)
    }
    const entry = separator > 0 ? explicit.get(model) : plain.get(model)
    if (entry === undefined) return notFound(model)
    if (isAmbiguous(entry)) {
      return Result.fail(
        new GatewayError({
          status: 409,
          code: "ambiguous_model",
          message: `The model \`${clip(model)}\` is ambiguous; use one of: ${entry.ambiguous.join(", ")}`,
          param: "model"
        })
      )
    }
    return checkEndpoint(entry, endpoint)
  }

  return { resolve, providers }
}
