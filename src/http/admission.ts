/**
 * Admission of a model request by the limits stage, once its body is read
 * and before its program runs: the request's gateway key and its project
 * (those with limits) are counted, and the request is refused with a 429 in
 * the caller's format when over one. Uploads, files and passthrough, whose
 * bodies are not read first, are admitted with nothing estimated. Settled
 * when the request's program ends (`routeProgram`), with the tokens and cost
 * its log line reports.
 *
 * Details
 * - The token estimate reserved is the body's size in tokens (4 bytes each)
 *   plus its output limit (`max_tokens`, `max_completion_tokens`,
 *   `max_output_tokens`, Gemini's `generationConfig.maxOutputTokens`); a
 *   request without one is expected to produce, at each target its plan may
 *   use, the model's `[models.<name>] max_tokens` where that is sent as the
 *   limit (upstreams of a non-OpenAI family), else `[limits]
 *   default_output_tokens`: the most of those. So every reservation bounds
 *   what its request may use (embeddings, rerank and count_tokens produce no
 *   output: none). A budget is charged that estimate at the dearest price of
 *   the models the request's plan may use.
 * - The `x-ratelimit-*` headers go on every answer of an admitted request, and
 *   with `retry-after` on the refusal.
 * - At the end: the tokens used when the answer reported them; none when the
 *   request failed without a usage; else the reservation stands.
 * - With nothing limited (`Limits.layerOff`) there is no admission at all: the
 *   handlers get `undefined` and call nothing.
 */
import { Effect, Result } from "effect"
import type { GatewayError, InfraError } from "../domain/index.ts"
import { CANCELLED, header } from "../pipeline/index.ts"
import type { Estimate, LimitsShape, RequestContext, Usage } from "../pipeline/index.ts"
import type { PlanTarget } from "../routing/plan.ts"
import type { RequestEndpoint } from "../routing/table.ts"
import type { Project } from "../tenancy/project.ts"
import type { ProjectResolver } from "./project.ts"

/** What ingress knows of a model request once its body is read. */
export interface AdmissionRequest {
  readonly ctx: RequestContext
  readonly project: Project
  readonly endpoint: RequestEndpoint
  /** Undefined for a request whose body is not read first (uploads, files, passthrough): nothing is estimated. */
  readonly model: string | undefined
  readonly json: Readonly<Record<string, unknown>>
  readonly bodyBytes: number
}

export type Admit = (request: AdmissionRequest) => Effect.Effect<void, GatewayError | InfraError>

const BYTES_PER_TOKEN = 4

/** Endpoints whose answers have no output tokens. */
const NO_OUTPUT: ReadonlySet<RequestEndpoint> = new Set(["embeddings", "rerank", "count_tokens"])

const generationLimit = (json: Readonly<Record<string, unknown>>): unknown => {
  const config = json.generationConfig
  return typeof config === "object" && config !== null ? (config as Record<string, unknown>).maxOutputTokens : undefined
}

/**
 * The output a request may produce: its own limit, else the most its targets
 * may produce (a model's `max_tokens` where it is sent as the limit, else
 * `fallback`); none for an endpoint without output.
 */
export const outputEstimate = (
  json: Readonly<Record<string, unknown>>,
  endpoint: RequestEndpoint,
  targets: () => ReadonlyArray<PlanTarget>,
  fallback: number
): number => {
  if (NO_OUTPUT.has(endpoint)) return 0
  const limit = json.max_tokens ?? json.max_completion_tokens ?? json.max_output_tokens ?? generationLimit(json)
  if (typeof limit === "number" && Number.isFinite(limit) && limit > 0) return limit
  const all = targets()
  if (all.length === 0) return fallback
  let most = 0
  for (const target of all) {
    const sent = target.provider.family === "openai" ? undefined : target.maxTokens
    most = Math.max(most, sent ?? fallback)
  }
  return most
}

/** The tokens a request is expected to use: its input by size, and its output estimate. */
export const tokenEstimate = (bodyBytes: number, output: number): number => Math.ceil(bodyBytes / BYTES_PER_TOKEN) + output

/** Every target the request's plan may send it to (none when its model does not resolve, which the program then refuses). */
export const targetsOf = ({ ctx, project, endpoint, model }: AdmissionRequest): ReadonlyArray<PlanTarget> => {
  if (model === undefined) return []
  const plan = project.table.resolve(model, header(ctx, "x-genai-provider"), endpoint)
  if (Result.isFailure(plan)) return []
  const { steps: planSteps, variants } = plan.success
  // The common plan (one step, no experiment): its targets as they are, no copies.
  if (variants === undefined && planSteps.length === 1) return planSteps[0].targets
  const steps = [...planSteps, ...(variants ?? []).flatMap((variant) => variant.steps)]
  return steps.flatMap((step) => step.targets)
}

/**
 * The most the request may cost: its estimated input and output at the
 * dearest of `targets` (0 when none is priced).
 */
export const costEstimate = (project: Project, targets: ReadonlyArray<PlanTarget>, bodyBytes: number, output: number): number => {
  const input = Math.ceil(bodyBytes / BYTES_PER_TOKEN)
  let most = 0
  for (const target of targets) {
    const price = project.priceOf(target.model)
    if (price !== undefined) most = Math.max(most, (input * price.input + output * price.output) / 1_000_000)
  }
  return most
}

const NO_BODY: Readonly<Record<string, unknown>> = {}

/**
 * The project of a request whose body is not read before its program
 * (transcription uploads, files, native passthrough), admitted by the limits
 * with nothing estimated: its requests and concurrency are counted, and its
 * usage, when its answer reports one, settled.
 */
export const admittedProject = (projectOf: ProjectResolver, admit: Admit | undefined, endpoint: RequestEndpoint): ProjectResolver =>
  admit === undefined
    ? projectOf
    : (ctx) => Effect.tap(projectOf(ctx), (project) => admit({ ctx, project, endpoint, model: undefined, json: NO_BODY, bodyBytes: 0 }))

/** What the request used, from its log line (at its end). */
const tokensUsed = (ctx: RequestContext, status: number): number | undefined => {
  const { input_tokens, output_tokens } = ctx.log
  if (input_tokens !== undefined) return input_tokens + (output_tokens ?? 0)
  return status >= 400 ? 0 : undefined
}

const addHeaders = (ctx: RequestContext, headers: Readonly<Record<string, string>>): void => {
  const into = (ctx.replyHeaders ??= {})
  for (const name in headers) into[name] = headers[name]
}

/** Settles every admission of a request, at its end, with what it used. */
const settleAll = (ctx: RequestContext, settles: ReadonlyArray<(usage: Usage) => void>) => (status: number) => {
  const usage: Usage = { tokens: tokensUsed(ctx, status), costUsd: ctx.log.cost_usd, cancel: false }
  for (const settle of settles) settle(usage)
}

/**
 * The admission of the gateway's limits; undefined when nothing is limited.
 * A request is counted for its key and for its project (a tenant snapshot's
 * `project_limits`), in that order; refused by the project, the key's
 * admission is cancelled.
 */
export const makeAdmit = (limits: LimitsShape, defaultOutputTokens: number): Admit | undefined => {
  if (!limits.enabled) return undefined
  return (request) => {
    const { ctx } = request
    const subjects = [ctx.callerKey?.subject, request.project.subject].filter((subject) => subject !== undefined)
    if (subjects.length === 0) return Effect.void
    // Nothing estimated for a request whose body is not read first (no model); its plan resolved once, when needed.
    let targets: ReadonlyArray<PlanTarget> | undefined
    const targetsOnce = () => (targets ??= targetsOf(request))
    const output = request.model === undefined ? 0 : outputEstimate(request.json, request.endpoint, targetsOnce, defaultOutputTokens)
    const estimate: Estimate = {
      tokens: tokenEstimate(request.bodyBytes, output),
      costUsd: () => costEstimate(request.project, targetsOnce(), request.bodyBytes, output)
    }
    // Settled at the end whatever happens meanwhile (a refusal, the caller leaving): each admission as it is made.
    const settles: Array<(usage: Usage) => void> = []
    ctx.settle = settleAll(ctx, settles)
    const admitFrom = (index: number): Effect.Effect<void, GatewayError | InfraError> => {
      if (index === subjects.length) return Effect.void
      return Effect.flatMap(limits.admit(subjects[index], estimate), (admission) => {
        if (admission._tag === "Refused") {
          for (const settle of settles.splice(0)) settle(CANCELLED)
          addHeaders(ctx, admission.headers)
          ctx.log.limits = "refused"
          return Effect.fail(admission.error)
        }
        if (admission.headers === undefined) ctx.log.limits = "uncounted"
        else {
          addHeaders(ctx, admission.headers)
          settles.push(admission.settle)
        }
        return admitFrom(index + 1)
      })
    }
    return admitFrom(0)
  }
}
