/**
 * The first steps of every model request: refuse an endpoint the project
 * switched off, resolve `model` to a plan (with `x-genai-provider`), and for an
 * experiment draw the variant (sticky with `x-gw-experiment-key`), reported in
 * `x-gw-variant` and the log line.
 */
import { Effect, Result } from "effect"
import { clip, GatewayError } from "../domain/index.ts"
import type { Plan, PlanStep, StepsShape } from "../routing/plan.ts"
import { drawWeighted } from "../routing/sampler.ts"
import type { RequestEndpoint } from "../routing/table.ts"
import type { EndpointType } from "../config/index.ts"
import type { Project } from "../tenancy/project.ts"
import { forbiddenFor } from "../tenancy/gateway-keys.ts"
import { header } from "./context.ts"
import type { RequestContext } from "./context.ts"

/** An endpoint type the project switched off (a tenant snapshot's `disabled_endpoints`). */
const featureDisabled = (endpoint: string): GatewayError =>
  new GatewayError({
    status: 403,
    code: "feature_disabled",
    message: `the ${endpoint} endpoint is disabled for this project`,
    classification: "feature_disabled"
  })

export interface ChosenPlan {
  readonly plan: Plan
  readonly steps: ReadonlyArray<PlanStep>
  /** What `steps` are, compiled with them. */
  readonly shape: StepsShape
  /** The drawn variant's parameters; undefined when there are none. */
  readonly overrides: Readonly<Record<string, unknown>> | undefined
  /** The resolved plan as a cache key part: its name, and the variant drawn (`function::f#fast`). */
  readonly resolved: string
}

export const choosePlan = (
  ctx: RequestContext,
  project: Project,
  model: string,
  endpoint: RequestEndpoint
): Effect.Effect<ChosenPlan, GatewayError> => {
  if (project.disabledEndpoints.size > 0 && project.disabledEndpoints.has(endpoint as EndpointType)) {
    return Effect.fail(featureDisabled(endpoint))
  }
  const resolved = project.table.resolve(model, header(ctx, "x-genai-provider"), endpoint)
  if (Result.isFailure(resolved)) return Effect.fail(resolved.failure)
  const plan = resolved.success
  ctx.log.model = clip(model)
  ctx.log.route = plan.name
  const key = ctx.callerKey
  if (key !== undefined && !key.allows(model, plan.name)) return Effect.fail(forbiddenFor(key, `the model \`${clip(model)}\``))
  if (plan.variants === undefined) return Effect.succeed({ plan, steps: plan.steps, shape: plan.shape, overrides: undefined, resolved: plan.name })
  return Effect.map(drawWeighted(plan.variants, header(ctx, "x-gw-experiment-key")), (variant) => {
    ;(ctx.replyHeaders ??= {})["x-gw-variant"] = variant.name
    ctx.log.variant = variant.name
    return {
      plan,
      steps: variant.steps,
      shape: variant.shape,
      overrides: Object.keys(variant.overrides).length > 0 ? variant.overrides : undefined,
      resolved: `${plan.name}#${variant.name}`
    }
  })
}
