/**
 * The chat program (`/v1/chat/completions`, `/v1/messages`, and chat-shaped
 * `/v1/responses`): resolve the model to a plan, draw an experiment variant,
 * then run the plan's attempts, each on the fast path (same wire family) or
 * the normalized path (translated), and log what happened.
 */
import { Effect } from "effect"
import { GatewayError } from "../../domain/index.ts"
import type { UpstreamError } from "../../domain/index.ts"
import type { ChatRequest, ProviderFamily, WireFamily } from "../../domain/index.ts"
import { CALLER_CODECS, PROVIDER_CODECS } from "../../formats/index.ts"
import { replaceTopLevelModel } from "../../formats/splice.ts"
import type { CallerFormat } from "../../formats/index.ts"
import type { ProviderClient, UpstreamCall } from "../../providers/transport.ts"
import { executePlan } from "../../routing/execute.ts"
import type { AttemptInfo } from "../../routing/execute.ts"
import type { PlanStep } from "../../routing/plan.ts"
import { servableSteps } from "../../routing/servable.ts"
import type { RoutingTable } from "../../routing/table.ts"
import { choosePlan } from "../choose-plan.ts"
import type { RequestContext } from "../context.ts"
import type { JsonLog } from "../telemetry/log.ts"
import { attemptLogger } from "../telemetry/attempts.ts"
import { ResponseCollector } from "./collector.ts"
import { chatTap } from "./fast.ts"
import { callerKey, callerKeyPolicy, forwardVerbatim, passThroughHeaders, translatedHeaders } from "../forward/index.ts"
import { translateJson, translateStream } from "./normalized.ts"

export interface ChatInput {
  readonly ctx: RequestContext
  /** The format the caller speaks (and is answered in). */
  readonly caller: CallerFormat
  /** The request body as received, and parsed. */
  readonly raw: Uint8Array
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
}

export interface ChatDependencies {
  readonly table: RoutingTable
  readonly client: ProviderClient["Service"]
  readonly log: JsonLog
}

/**
 * Dropped field names are the caller's own keys: only those that can stand in
 * a header are listed (others, and commas, would corrupt it); the count of the
 * rest is appended so nothing is hidden.
 */
const HEADER_SAFE = /^[\x21-\x2b\x2d-\x7e]+$/
const droppedHeader = (names: ReadonlyArray<string>): string => {
  const safe = names.filter((name) => HEADER_SAFE.test(name))
  const unsafe = names.length - safe.length
  return unsafe === 0 ? safe.join(",") : [...safe, `(${unsafe} more)`].join(",")
}

/** Facts about a plan's steps that do not depend on the request, computed once per steps array. */
interface PlanShape {
  readonly hasNonChat: boolean
  /** The one wire family of every target, or undefined when they differ. */
  readonly onlyFamily: ProviderFamily | undefined
}
const shapes = new WeakMap<ReadonlyArray<PlanStep>, PlanShape>()
const planShape = (steps: ReadonlyArray<PlanStep>): PlanShape => {
  let shape = shapes.get(steps)
  if (shape === undefined) {
    const families = new Set(steps.flatMap((step) => step.targets.map((target) => target.provider.family)))
    shape = { hasNonChat: families.has("other"), onlyFamily: families.size === 1 ? [...families][0] : undefined }
    shapes.set(steps, shape)
  }
  return shape
}

export const makeChatProgram = (deps: ChatDependencies) => {
  const { table, client, log } = deps

  return Effect.fnUntraced(function*(input: ChatInput) {
    const { ctx } = input
    const family = input.caller
    const callerCodec = CALLER_CODECS[family]
    const headers = ctx.req.headers
    const chosen = yield* choosePlan(ctx, table, input.model, "chat")
    const plan = chosen.plan
    ctx.log.stream = input.stream
    let steps = chosen.steps
    const overridden = chosen.overrides !== undefined
    const json = overridden ? { ...input.json, ...chosen.overrides } : input.json

    // The canonical request, decoded once and only if some attempt needs it.
    let canonical: ChatRequest | GatewayError | undefined
    const canonicalRequest = (): ChatRequest | GatewayError => {
      if (canonical === undefined) {
        const decoded = callerCodec.decodeRequest(json)
        canonical = decoded.ok
          ? decoded.value
          : new GatewayError({ status: 400, code: "invalid_request", message: decoded.message, ...(decoded.param === undefined ? {} : { param: decoded.param }) })
      }
      return canonical
    }

    // Skip targets that cannot serve this request; none left → say why. Only a plan with a
    // non-chat provider, or a request asking for a response format, can have such targets.
    if (json.response_format != null || json.text != null || planShape(steps).hasNonChat) {
      const request = canonicalRequest()
      const servable = servableSteps(steps, {
        capability: "chat",
        responseFormat: request instanceof GatewayError ? undefined : request.responseFormat?.type
      })
      if (servable instanceof GatewayError) return yield* servable
      steps = servable
    }
    if (family === "responses" || planShape(steps).onlyFamily !== family) {
      const request = canonicalRequest()
      if (request instanceof GatewayError) return yield* request
    }

    const keyFor = callerKeyPolicy(callerKey(headers))
    // Same-format bodies: the caller's bytes, with the model spliced in for an alias (once per
    // target model, reused by retries); re-serialized only when a variant changed parameters.
    const fastBodies = new Map<string, string | Uint8Array>()
    const fastBody = (model: string): string | Uint8Array => {
      if (model === input.model && !overridden) return input.raw
      let body = fastBodies.get(model)
      if (body === undefined) {
        body = (overridden ? undefined : replaceTopLevelModel(input.raw, input.model, model)) ?? JSON.stringify({ ...json, model })
        fastBodies.set(model, body)
      }
      return body
    }
    const collector = new ResponseCollector()

    const attempt = ({ target }: AttemptInfo): Effect.Effect<void, UpstreamError> => {
      const provider = target.provider
      const providerFamily = provider.family as WireFamily
      const fast = providerFamily === family
      const { path, headers: auth } = provider.request("chat", target.model, keyFor(provider.origin))
      const extra: Record<string, string> = { "x-gw-upstream-provider": provider.id }
      let body: string | Uint8Array
      let callHeaders: Record<string, string>
      if (fast) {
        body = fastBody(target.model)
        callHeaders = passThroughHeaders(headers, auth, ctx.requestId)
        callHeaders["content-type"] ??= "application/json"
      } else {
        const request = canonicalRequest() as ChatRequest
        const encoded = PROVIDER_CODECS[providerFamily].encodeRequest(request, {
          model: target.model,
          callerFamily: family === "responses" ? undefined : family,
          defaultMaxTokens: target.maxTokens
        })
        body = JSON.stringify(encoded.body)
        callHeaders = translatedHeaders(auth, ctx.requestId, input.stream)
        const dropped = droppedHeader(encoded.dropped)
        if (dropped !== "") {
          extra["x-gw-dropped-params"] = dropped
          ctx.log.dropped_params = dropped
        }
      }
      const call: UpstreamCall = {
        providerId: provider.id,
        family: provider.family,
        origin: provider.origin,
        method: "POST",
        path,
        headers: callHeaders,
        body,
        idleTimeoutMs: target.timeoutMs
      }
      ctx.log.provider = provider.id
      ctx.log.upstream_model = target.model
      ctx.log.path_kind = fast ? "fast" : "normalized"
      return client.send(call).pipe(
        Effect.flatMap((response) => {
          if (fast) return forwardVerbatim(ctx, providerFamily, response, extra, (sse) => chatTap(providerFamily, sse, collector))
          const translation = {
            ctx,
            providerId: provider.id,
            providerFamily: provider.family,
            provider: PROVIDER_CODECS[providerFamily],
            caller: callerCodec,
            request: canonicalRequest() as ChatRequest,
            headers: extra,
            collector
          }
          return input.stream ? translateStream(translation, response) : translateJson(translation, response)
        })
      )
    }

    yield* executePlan(plan, steps, attempt, attemptLogger(ctx, log)).pipe(Effect.ensuring(Effect.sync(() => {
      if (collector.stopReason !== undefined) ctx.log.finish_reason = collector.stopReason
      if (collector.usage !== undefined) {
        ctx.log.input_tokens = collector.usage.inputTokens
        ctx.log.output_tokens = collector.usage.outputTokens
      }
      if (collector.model !== undefined) ctx.log.upstream_model = collector.model
      // A stream that failed after its head keeps status 200; the log line still says it failed.
      if (collector.error !== undefined) ctx.log.error_code ??= collector.error
    })))
  })
}
