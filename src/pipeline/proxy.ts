/**
 * The program of every non-chat model endpoint (embeddings, images, speech,
 * transcriptions, rerank, count_tokens): the same resolution, plans, retries,
 * timeouts and error mapping as chat, with the upstream body forwarded to the
 * caller byte for byte (JSON or binary audio): held until complete (a JSON
 * body must parse) and sent once the plan succeeded; a body past the hold
 * limit, or an event stream, is a reply whose body streams as it arrives. A
 * provider whose family answers an endpoint in a format of its own (Gemini's
 * `batchEmbedContents`, `countTokens`) gets the body its codec encodes
 * (`endpointCodec`, src/formats/endpoint-codecs.ts) and its answer is decoded
 * back, held.
 *
 * A held JSON answer that reports token usage (embeddings' `prompt_tokens`,
 * images' and transcriptions' `input_tokens` / `output_tokens`, Cohere's
 * `billed_units`) is priced at the model that answered, like chat: its tokens
 * and `cost_usd` on the log line (settled against the caller's limits and
 * budgets from there), `gateway.cost_usd` on the GenAI span, `x-gw-cost-usd`
 * on the answer. An answer streamed as it arrives is not read: not priced.
 *
 * The request body is either a JSON object (its `model` replaced by the
 * target's) or a body builder called per attempt (multipart uploads, which
 * are re-streamed from a spooled copy on every attempt).
 */
import { Effect, Exit, Result } from "effect"
import type { Readable } from "node:stream"
import { GatewayError, nothingLeft, onExitInPlace, UpstreamError } from "../domain/index.ts"
import type { Capability, FailureSource, WireFamily } from "../domain/index.ts"
import { endpointCodec } from "../formats/index.ts"
import type { EndpointCodec } from "../formats/index.ts"
import { replaceTopLevelModel } from "../formats/splice.ts"
import { unauthenticatedCall } from "../providers/adapter.ts"
import type { Operation } from "../providers/adapter.ts"
import type { ProviderClient, UpstreamResponse } from "../providers/transport.ts"
import { executePlan } from "../routing/execute.ts"
import { servableSteps } from "../routing/servable.ts"
import type { PlanStep, PlanTarget } from "../routing/plan.ts"
import type { RequestEndpoint } from "../routing/table.ts"
import type { Project } from "../tenancy/project.ts"
import { cacheKey, cacheUse, hitHeaders } from "./cache/index.ts"
import type { CacheScope, ResponseCache } from "./cache/index.ts"
import { choosePlan } from "./choose-plan.ts"
import { header } from "./context.ts"
import type { RequestContext } from "./context.ts"
import {
  callerKey,
  callerKeyPolicy,
  forwardHeld,
  forwardStream,
  isEventStream,
  isJson,
  OPEN_GATE,
  passThroughHeaders,
  requestCredential,
  responseHeaders
} from "./forward/index.ts"
import type { Forwarded } from "./forward/index.ts"
import { failureOf, ModelCallTrace } from "./model-call.ts"
import { attemptScoped, bodyReply, isValueBody, onBodyExit, reply } from "./reply.ts"
import type { Reply } from "./reply.ts"
import type { Surface } from "./security/index.ts"
import type { JsonLog } from "../infra/log.ts"
import { attemptLogger } from "./attempts.ts"
import { Spend } from "./spend.ts"
import { embeddingsRequestAttributes } from "./telemetry/index.ts"
import type { GenAiOperation, GenAiResponseSummary, TelemetryShape } from "./telemetry/index.ts"

export interface ProxyBody {
  readonly contentType: string
  /** Byte length of each attempt's body when known (so the upstream gets `content-length`, not chunks). */
  readonly contentLength?: ((target: PlanTarget, overrides: Readonly<Record<string, unknown>>) => number) | undefined
  /** A fresh body for each attempt; `overrides` are an experiment variant's parameters. */
  readonly forTarget: (target: PlanTarget, overrides: Readonly<Record<string, unknown>>) => string | Uint8Array | Readable
}

export interface ProxyInput {
  readonly ctx: RequestContext
  /** The request's project: its routing table and stage settings. */
  readonly project: Project
  readonly operation: Operation
  readonly endpoint: RequestEndpoint
  readonly capability: Capability
  readonly model: string
  readonly body: ProxyBody
  /** The caller's wire family, for SSE error frames. */
  readonly family: WireFamily
  /** The parsed body and what of it the input guardrail reads; absent for bodies it does not scan (audio). */
  readonly scan?: { readonly surface: Surface; readonly json: Readonly<Record<string, unknown>> } | undefined
}

/** A JSON body whose `model` becomes each target's model name. */
export const jsonBody = (raw: Uint8Array, json: Readonly<Record<string, unknown>>, model: string): ProxyBody => ({
  contentType: "application/json",
  forTarget: (target, overrides) => {
    if (overrides !== NO_OVERRIDES) return JSON.stringify({ ...json, ...overrides, model: target.model })
    if (target.model === model) return raw
    return replaceTopLevelModel(raw, model, target.model) ?? JSON.stringify({ ...json, model: target.model })
  }
})

const NO_OVERRIDES: Readonly<Record<string, unknown>> = Object.freeze({})

export interface ProxyDependencies {
  readonly client: ProviderClient["Service"]
  readonly cache: ResponseCache["Service"]
  readonly telemetry: TelemetryShape
  readonly log: JsonLog
}

/** The GenAI operation of each model operation the proxy serves (count_tokens is not a model call). */
const GENAI_OPERATION: Partial<Record<Operation, GenAiOperation>> = {
  embeddings: "embeddings",
  image_generation: "image_generation",
  audio_speech: "audio_speech",
  audio_transcription: "audio_transcription",
  audio_translation: "audio_translation",
  rerank: "rerank"
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)
const count = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined)

/** What a JSON answer of a non-chat endpoint says of itself: model and token usage (OpenAI and Cohere shapes). */
const bodySummary = (json: unknown): GenAiResponseSummary => {
  if (!isRecord(json)) return {}
  const usage = isRecord(json.usage) ? json.usage : isRecord(json.meta) && isRecord(json.meta.billed_units) ? json.meta.billed_units : undefined
  const input = count(usage?.prompt_tokens) ?? count(usage?.input_tokens)
  const output = count(usage?.completion_tokens) ?? count(usage?.output_tokens) ?? 0
  return {
    id: typeof json.id === "string" ? json.id : undefined,
    model: typeof json.model === "string" ? json.model : undefined,
    usage: input === undefined ? undefined : { inputTokens: input, outputTokens: output }
  }
}

/** The largest answer a translated endpoint reads (embeddings of a large batch). */
const TRANSLATED_LIMIT = 64 * 1024 * 1024

/**
 * A JSON body no target's codec can encode (Gemini embeds only text): the caller's 400,
 * before anything is sent. Undefined when every target can take it.
 */
const untranslatableBody = (input: ProxyInput, steps: ReadonlyArray<PlanStep>): GatewayError | undefined => {
  const json = input.scan?.json
  if (json === undefined) return undefined
  for (const step of steps) {
    for (const target of step.targets) {
      const encoded = endpointCodec(input.operation, target.provider.family)?.encodeRequest(json, target.model)
      if (encoded !== undefined && Result.isFailure(encoded)) {
        return new GatewayError({ status: 400, code: "invalid_request", message: encoded.failure.message, param: encoded.failure.param })
      }
    }
  }
  return undefined
}

/** Reads a translated endpoint's answer and decodes it to the caller's format; the attempt resolves with it unsent. */
const translateHeld = (
  codec: EndpointCodec,
  request: Readonly<Record<string, unknown>>,
  source: FailureSource,
  response: UpstreamResponse,
  extra: Readonly<Record<string, string>>,
  inspect: (json: unknown) => undefined
): Effect.Effect<Forwarded, UpstreamError> =>
  Effect.flatMap(response.body.readAll(TRANSLATED_LIMIT), (bytes) => {
    let json: unknown
    try {
      json = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"))
    } catch {
      return Effect.fail(UpstreamError.fault(source, "upstream sent a response that is not JSON", { status: response.status }))
    }
    const decoded = codec.decodeResponse(json, request)
    if (Result.isFailure(decoded)) return Effect.fail(UpstreamError.fault(source, decoded.failure.message, { status: response.status }))
    inspect(decoded.success)
    const headers = { ...responseHeaders(response.headers, "own"), ...extra, "content-type": "application/json" }
    return Effect.succeed<Forwarded>(reply(200, headers, Buffer.from(JSON.stringify(decoded.success))))
  })

export const makeProxyProgram = ({ client, log, cache, telemetry }: ProxyDependencies) =>
  Effect.fnUntraced(function*(input: ProxyInput) {
    const { ctx } = input
    const trace = new ModelCallTrace(telemetry, ctx, input.project.projectId)
    const chosen = yield* trace.resolve(input.model, choosePlan(ctx, input.project, input.model, input.endpoint))
    const { plan, steps: planSteps, overrides: drawn } = chosen
    const overrides = drawn ?? NO_OVERRIDES
    const { scan } = input
    if (scan !== undefined) yield* trace.guardInput(input.project.guard, scan.surface, () => drawn === undefined ? scan.json : { ...scan.json, ...drawn })

    // Targets whose provider cannot do this operation are skipped; none left → 400 (docs/reference/gateway-spec.md §4.3).
    const servable = servableSteps(planSteps, { capability: input.capability })
    if (Result.isFailure(servable)) return yield* servable.failure
    const steps = servable.success
    const untranslatable = untranslatableBody(input, steps)
    if (untranslatable !== undefined) return yield* untranslatable

    // Embeddings are cached (in auto mode always): a hit answers with the stored body.
    const caching = yield* planBodyCaching(input, chosen.resolved, drawn, steps)
    if (caching !== undefined) {
      const entry = yield* trace.cacheLookup(caching.mode, cache.lookup(caching.scope, caching.key))
      if (entry?.kind === "body") {
        ctx.log.cache = "hit"
        ctx.log.provider = entry.provider
        return bodyReply(ctx, entry.status, entry.bytes, entry.contentType, hitHeaders(entry))
      }
      ctx.log.cache = "miss"
    }

    const keyFor = callerKeyPolicy(callerKey(ctx.req.headers))
    const genAiOperation = telemetry.genAi.enabled ? GENAI_OPERATION[input.operation] : undefined
    // What the answer that succeeded says of itself, and the model that gave it (priced at the end).
    let summary: GenAiResponseSummary | undefined
    let answeredBy = input.model
    const inspectFor = (model: string) => (json: unknown): undefined => {
      summary = bodySummary(json)
      answeredBy = model
    }
    const attempts = executePlan(plan, steps, (info) => {
      const { target } = info
      const provider = target.provider
      const providerRequest = provider.request(input.operation, target.model, keyFor(provider.origin))
      const refused = unauthenticatedCall(provider, providerRequest)
      if (refused !== undefined) return Effect.fail(refused).pipe(trace.attempt(info, undefined, () => undefined))
      const { path, headers: auth, secret } = providerRequest
      const headers = passThroughHeaders(ctx.req.headers, auth, ctx.requestId)
      headers["content-type"] = input.body.contentType
      // A provider answering in a format of its own (Gemini's embeddings): its body, checked encodable above.
      const codec = input.scan === undefined ? undefined : endpointCodec(input.operation, provider.family)
      const request = codec === undefined ? undefined : { ...input.scan?.json, ...overrides }
      const body = codec === undefined || request === undefined
        ? input.body.forTarget(target, overrides)
        : JSON.stringify(Result.getOrThrow(codec.encodeRequest(request, target.model)))
      const length = codec === undefined ? input.body.contentLength?.(target, overrides) : undefined
      if (length !== undefined) headers["content-length"] = String(length)
      ctx.log.provider = provider.id
      ctx.log.upstream_model = target.model
      return client.send({
        providerId: provider.id,
        family: provider.family,
        origin: provider.origin,
        method: "POST",
        path,
        headers,
        body,
        idleTimeoutMs: target.timeoutMs,
        secret
      }).pipe(
        Effect.flatMap((response) => {
          trace.responded()
          const source = { providerId: provider.id, family: provider.family }
          const extra = { "x-gw-upstream-provider": provider.id }
          if (codec !== undefined && request !== undefined) return translateHeld(codec, request, source, response, extra, inspectFor(target.model))
          return isEventStream(response)
            ? forwardStream(ctx, input.family, source, response, extra, OPEN_GATE)
            : forwardHeld(source, response, extra, isJson(response) && response.status < 300 ? inspectFor(target.model) : undefined)
        }),
        attemptScoped,
        trace.attempt(info, undefined, () => ctx.log.error_code)
      )
    }, attemptLogger(ctx, log))
    let costUsd: number | undefined
    // The GenAI record of the call as an exit hook's work: undefined when nothing is left to run (GenAI off).
    const record = (exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> | undefined =>
      genAiOperation === undefined ? undefined : nothingLeft(trace.record(() => ({
        operation: genAiOperation,
        requestedModel: input.model,
        requestAttributes: genAiOperation === "embeddings" && input.scan !== undefined ? embeddingsRequestAttributes(input.scan.json) : undefined,
        stream: false,
        response: summary,
        error: failureOf(exit),
        costUsd
      })))
    // A streamed body is over when it ends: recorded there. A held one is priced first.
    const forwarded = yield* onExitInPlace(attempts, (exit) => {
      if (Exit.isFailure(exit)) return record(exit)
      if (!isValueBody(exit.value.body)) return undefined
      costUsd = noteUsage(ctx, input.project, answeredBy, summary)
      return record(exit)
    })
    const { body } = forwarded
    if (!isValueBody(body)) return reply(forwarded.status, forwarded.headers, onBodyExit(body, record))
    // The store returns at once (it writes in the background): the answer is not held up by it.
    if (caching !== undefined && forwarded.status === 200 && forwarded.headers["content-encoding"] === undefined) {
      yield* cache.store(caching.scope, caching.key, {
        kind: "body",
        status: forwarded.status,
        contentType: String(forwarded.headers["content-type"] ?? "application/json"),
        bytes: body,
        storedAt: Date.now(),
        provider: ctx.log.provider ?? ""
      }, caching.ttlSeconds)
    }
    return forwarded as Reply
  })

/**
 * Notes a held answer's usage on the log line and prices it at `model`
 * (`x-gw-cost-usd`, `cost_usd`); the cost, or undefined when the answer
 * reported no usage or the model has no price.
 */
const noteUsage = (ctx: RequestContext, project: Project, model: string, summary: GenAiResponseSummary | undefined): number | undefined => {
  const usage = summary?.usage
  if (usage === undefined) return undefined
  ctx.log.input_tokens = usage.inputTokens
  ctx.log.output_tokens = usage.outputTokens
  const spend = new Spend(project.priceOf)
  spend.begin(model, undefined)
  spend.end(usage)
  spend.note(ctx)
  return spend.costUsd
}

/** How an embeddings request uses the cache, or undefined (another endpoint, the cache off, mode never). */
const planBodyCaching = (
  input: ProxyInput,
  resolved: string,
  overrides: Readonly<Record<string, unknown>> | undefined,
  steps: ReadonlyArray<PlanStep>
) => {
  const { ctx, project } = input
  const section = project.settings.file.cache
  if (!section.enabled || input.operation !== "embeddings" || input.scan === undefined) return Effect.succeed(undefined)
  const decided = cacheUse(section, "embeddings", input.scan.json, header(ctx, "x-gw-cache"), header(ctx, "x-gw-cache-ttl"))
  if (Result.isFailure(decided)) return Effect.fail(decided.failure)
  const use = decided.success
  if (use === undefined) return Effect.succeed(undefined)
  const credential = requestCredential(callerKey(ctx.req.headers), steps)
  const scope: CacheScope = { section, projectId: project.projectId, credential }
  const key = cacheKey({ projectId: project.projectId, credential, plan: resolved, overrides, format: "embeddings", body: input.scan.json })
  return Effect.succeed({ scope, key, ttlSeconds: use.ttlSeconds, mode: use.mode })
}
