/**
 * The stages every model request runs, in this order, whichever program runs
 * it (chat, or the other model endpoints): resolve the model to a plan, guard
 * the input, answer from the cache, run the plan's attempts, record the call.
 * Both programs call these, so the sequence and its rules (what the log line
 * says of a cache hit, when a call is recorded) are stated once; what differs
 * (chat's translation and output guardrail, the proxy's bodies) stays in each.
 *
 * The programs read their services from the Effect context (`modelServices`)
 * once, when they are built, not per request: a test provides its own layers
 * (a scripted `ProviderClient`, an in-memory cache) to one program.
 */
import { Effect, Exit, Result } from "effect"
import type { GatewayError, UpstreamError } from "../domain/index.ts"
import { Log } from "../infra/log.ts"
import type { JsonLog } from "../infra/log.ts"
import { ProviderClient } from "../providers/transport.ts"
import { executePlan } from "../routing/execute.ts"
import type { AttemptInfo } from "../routing/execute.ts"
import type { PlanStep } from "../routing/plan.ts"
import type { RequestEndpoint } from "../routing/table.ts"
import type { Project } from "../tenancy/project.ts"
import { attemptLogger } from "./attempts.ts"
import { cacheKey, cacheUse, ResponseCache } from "./cache/index.ts"
import type { CacheEntry, CacheScope, CacheUse } from "./cache/index.ts"
import { choosePlan } from "./choose-plan.ts"
import type { ChosenPlan } from "./choose-plan.ts"
import { header } from "./context.ts"
import type { RequestContext } from "./context.ts"
import { callerKey, requestCredential } from "./forward/index.ts"
import type { Forwarded } from "./forward/index.ts"
import type { ModelCallTrace } from "./model-call.ts"
import { isValueBody } from "./reply.ts"
import type { Reply } from "./reply.ts"
import type { Surface } from "./security/index.ts"
import { Telemetry } from "./telemetry/index.ts"
import type { TelemetryShape } from "./telemetry/index.ts"

/** The services a model program requires from the context. */
export type ModelServices = ProviderClient | ResponseCache | Telemetry | Log

export interface ModelServiceShapes {
  readonly client: ProviderClient["Service"]
  readonly cache: ResponseCache["Service"]
  readonly telemetry: TelemetryShape
  readonly log: JsonLog
}

/**
 * The model programs' services, read from the context when a program is built.
 * Read per request instead (four `yield*` of a tag in the request's program),
 * they cost about 8,000 instructions per request (callgrind, Node 24: a request
 * program yielding the four tags against one closing over them, 200,000 runs
 * each); built once, a request pays nothing for them.
 */
export const modelServices: Effect.Effect<ModelServiceShapes, never, ModelServices> = Effect.gen(function*() {
  return { client: yield* ProviderClient, cache: yield* ResponseCache, telemetry: yield* Telemetry, log: yield* Log }
})

/** What every model request brings: its context, its project, the model it asked for. */
export interface ModelRequest {
  readonly ctx: RequestContext
  readonly project: Project
  readonly model: string
}

/** The caller's parameters with an experiment variant's merged in. */
export const withOverrides = (json: Readonly<Record<string, unknown>>, overrides: Readonly<Record<string, unknown>> | undefined) =>
  overrides === undefined ? json : { ...json, ...overrides }

/**
 * Resolution (in its span) and the project's input guardrail over what the
 * caller sent, with the drawn variant's parameters merged in. No `surface`: a
 * body the guardrail does not read (audio).
 */
export const resolveGuarded = (
  trace: ModelCallTrace,
  request: ModelRequest,
  endpoint: RequestEndpoint,
  surface: Surface | undefined,
  json: Readonly<Record<string, unknown>>
): Effect.Effect<ChosenPlan, GatewayError> => {
  const { ctx, project, model } = request
  const resolved = trace.resolve(model, choosePlan(ctx, project, model, endpoint))
  const { guard } = project
  if (surface === undefined || !guard.enabled) return resolved
  return Effect.flatMap(resolved, (chosen) => Effect.as(trace.guardInput(guard, surface, () => withOverrides(json, chosen.overrides)), chosen))
}

/** How a request uses the cache: where its answer is kept, under which key, for how long. */
export interface Caching extends CacheUse {
  readonly scope: CacheScope
  readonly key: string
}

/**
 * How a request of `endpoint` uses the cache, or undefined when it does not
 * (the cache off, mode `never`, `auto` for a chat that is not deterministic);
 * a malformed `x-gw-cache*` header fails with its 400. `json` is what the key
 * and `auto` read of the request; `format` tells apart answers of one request
 * in different formats.
 */
export const cachingOf = (
  request: ModelRequest,
  endpoint: "chat" | "embeddings",
  format: string,
  json: Readonly<Record<string, unknown>>,
  chosen: ChosenPlan,
  steps: ReadonlyArray<PlanStep>
): Effect.Effect<Caching | undefined, GatewayError> => {
  const { ctx, project } = request
  const section = project.settings.file.cache
  if (!section.enabled) return Effect.succeed(undefined)
  const decided = cacheUse(section, endpoint, json, header(ctx, "x-gw-cache"), header(ctx, "x-gw-cache-ttl"))
  if (Result.isFailure(decided)) return Effect.fail(decided.failure)
  const use = decided.success
  if (use === undefined) return Effect.succeed(undefined)
  const credential = requestCredential(callerKey(ctx.req.headers), steps)
  const scope: CacheScope = { section, projectId: project.projectId, credential }
  const key = cacheKey({ projectId: project.projectId, credential, plan: chosen.resolved, overrides: chosen.overrides, format, body: json })
  return Effect.succeed({ scope, key, ttlSeconds: use.ttlSeconds, mode: use.mode })
}

/**
 * The answer from the cache (the lookup in its span), or undefined: a miss,
 * or an entry `answer` cannot use. The log line says which, and on a hit the
 * provider that gave the stored answer.
 */
export const answerFromCache = (
  trace: ModelCallTrace,
  cache: ResponseCache["Service"],
  ctx: RequestContext,
  caching: Caching,
  answer: (entry: CacheEntry) => Reply | undefined
): Effect.Effect<Reply | undefined> =>
  Effect.map(trace.cacheLookup(caching.mode, cache.lookup(caching.scope, caching.key)), (entry) => {
    const answered = entry === undefined ? undefined : answer(entry)
    if (answered === undefined) {
      ctx.log.cache = "miss"
      return undefined
    }
    ctx.log.cache = "hit"
    ctx.log.provider = entry?.provider
    return answered
  })

/**
 * The plan's attempts, each logged. The call is recorded (`record`) when it is
 * over: here for a failure or a held answer; a streamed answer is over when its
 * body ends, and the program records it there.
 */
export const runPlan = <R>(
  ctx: RequestContext,
  log: JsonLog,
  chosen: ChosenPlan,
  steps: ReadonlyArray<PlanStep>,
  attempt: (info: AttemptInfo) => Effect.Effect<Forwarded, UpstreamError, R>,
  record: (exit: Exit.Exit<Forwarded, UpstreamError>) => Effect.Effect<void>
): Effect.Effect<Forwarded, UpstreamError, R> =>
  executePlan(chosen.plan, steps, attempt, attemptLogger(ctx, log)).pipe(
    Effect.onExit((exit) => (Exit.isSuccess(exit) && !isValueBody(exit.value.body) ? Effect.void : record(exit)))
  )
