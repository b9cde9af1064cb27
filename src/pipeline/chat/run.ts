/**
 * The chat program (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`):
 * resolve the model to a plan, draw an experiment variant, then run the plan's
 * attempts, each on the fast path (the provider speaks the caller's format:
 * bytes forwarded) or the normalized path (translated), and log what happened.
 *
 * A non-streamed answer is held until it is complete and good, and sent after
 * the plan succeeded; a stream commits with its first content (one rule for
 * both paths), so everything before that is an attempt routing may retry.
 */
import { Effect, Exit, Result } from "effect"
import type { Scope } from "effect"
import { ECHO_LIMIT, GatewayError, nothingLeft, onExitInPlace } from "../../domain/index.ts"
import type { CallerFormat, ChatRequest, UpstreamError, WireFamily } from "../../domain/index.ts"
import { CALLER_CODECS, OpenAiChat, PROVIDER_CODECS } from "../../formats/index.ts"
import type { DecodeFailure } from "../../formats/index.ts"
import { replaceTopLevelModel } from "../../formats/splice.ts"
import { unauthenticatedCall } from "../../providers/adapter.ts"
import type { CompiledProvider, ProviderRequest } from "../../providers/adapter.ts"
import type { ProviderClient, UpstreamCall } from "../../providers/transport.ts"
import { executePlan } from "../../routing/execute.ts"
import type { AttemptInfo, Hedging } from "../../routing/execute.ts"
import type { PlanStep, PlanTarget } from "../../routing/plan.ts"
import { servableSteps, speaksNatively } from "../../routing/servable.ts"
import type { Project } from "../../tenancy/project.ts"
import { cacheKey, cacheUse } from "../cache/index.ts"
import type { CacheScope, ResponseCache } from "../cache/index.ts"
import { choosePlan } from "../choose-plan.ts"
import type { ChosenPlan } from "../choose-plan.ts"
import { header } from "../context.ts"
import { attemptScoped, discardReply, ensuringBody, isValueBody, JSON_CONTENT_TYPE, onBodyExit, reply } from "../reply.ts"
import type { Reply } from "../reply.ts"
import { replayChat } from "./replay.ts"
import { outputViolationError } from "../security/Guardrail.ts"
import type { Violation } from "../security/Guardrail.ts"
import { failureOf, ModelCallTrace } from "../model-call.ts"
import type { TelemetryShape } from "../telemetry/index.ts"
import type { Surface } from "../security/surfaces.ts"
import type { RequestContext } from "../context.ts"
import type { JsonLog } from "../../infra/log.ts"
import { attemptLogger } from "../attempts.ts"
import { ResponseCollector } from "./collector.ts"
import { Spend } from "../spend.ts"
import { chatJsonInspector, chatStreamGate } from "./fast.ts"
import {
  callerKey,
  callerKeyPolicy,
  firstContentWithin,
  forwardHeld,
  forwardStream,
  isEventStream,
  passThroughHeaders,
  requestCredential,
  translatedHeaders
} from "../forward/index.ts"
import type { Forwarded } from "../forward/index.ts"
import { translateJson, translateStream } from "./normalized.ts"
import { continueAfter, StreamSplice } from "./continuation.ts"

export interface ChatInput {
  readonly ctx: RequestContext
  /** The request's project: its routing table and stage settings. */
  readonly project: Project
  /** The format the caller speaks (and is answered in). */
  readonly caller: CallerFormat
  /** The request body as received, and parsed. */
  readonly raw: Uint8Array
  readonly json: Record<string, unknown>
  readonly model: string
  readonly stream: boolean
  /** The answer is kept as Responses API state (src/http/responses-state.ts): the Response object says so. */
  readonly stored?: ChatRequest["stored"]
}

export interface ChatDependencies {
  readonly client: ProviderClient["Service"]
  readonly cache: ResponseCache["Service"]
  readonly telemetry: TelemetryShape
  readonly log: JsonLog
}

/**
 * Dropped field names are the caller's own keys: only those that can stand in
 * a header are listed (others, and commas, would corrupt it), up to
 * `ECHO_LIMIT` characters in all; the count of the rest is appended so nothing
 * is hidden.
 */
const HEADER_SAFE = /^[\x21-\x2b\x2d-\x7e]+$/
const droppedHeader = (names: ReadonlyArray<string>): string => {
  const listed: Array<string> = []
  let length = 0
  for (const name of names) {
    if (!HEADER_SAFE.test(name) || length + name.length + 1 > ECHO_LIMIT) continue
    listed.push(name)
    length += name.length + 1
  }
  const rest = names.length - listed.length
  return rest === 0 ? listed.join(",") : [...listed, `(${rest} more)`].join(",")
}

/** Chat attempts may be hedged (`hedge_after_ms`): an answer that lost its race by an instant is released. */
const HEDGING: Hedging<Forwarded> = { discard: discardReply }

/** A caller's body that did not decode: 400 naming the field. */
const invalidRequest = ({ message, param }: DecodeFailure): GatewayError =>
  new GatewayError({ status: 400, code: "invalid_request", message, ...(param === undefined ? {} : { param }) })

/** What the input guardrail reads of each caller format. */
const SURFACE: Readonly<Record<CallerFormat, Surface>> = {
  openai: "chat_completions",
  anthropic: "messages",
  responses: "responses"
}

/** The caller's field that asks for a response format. */
const RESPONSE_FORMAT_PARAM: Readonly<Record<CallerFormat, string>> = {
  openai: "response_format",
  anthropic: "output_config.format",
  responses: "text.format"
}

export const makeChatProgram = (deps: ChatDependencies) => {
  const { client, log, cache, telemetry } = deps

  return Effect.fnUntraced(function*(input: ChatInput) {
    const { ctx, caller } = input
    const callerCodec = CALLER_CODECS[caller]
    const headers = ctx.req.headers
    const trace = new ModelCallTrace(telemetry, ctx, input.project.projectId)
    const chosen = yield* trace.resolve(input.model, choosePlan(ctx, input.project, input.model, "chat"))
    const plan = chosen.plan
    ctx.log.stream = input.stream
    let steps = chosen.steps
    const overridden = chosen.overrides !== undefined
    const json = overridden ? { ...input.json, ...chosen.overrides } : input.json
    yield* trace.guardInput(input.project.guard, SURFACE[caller], () => json)

    // The canonical request, decoded once and only if some attempt needs it.
    let canonical: Result.Result<ChatRequest, GatewayError> | undefined
    const canonicalRequest = (): Result.Result<ChatRequest, GatewayError> =>
      canonical ??= Result.mapError(
        input.stored === undefined ? callerCodec.decodeRequest(json) : Result.map(callerCodec.decodeRequest(json), (request) => ({ ...request, stored: input.stored })),
        invalidRequest
      )

    // Skip targets that cannot serve this request; none left → say why. Only a plan with a
    // non-chat provider, or a target that needs translating, can have such targets.
    const { shape } = chosen
    if (!shape.allNative[caller] || shape.hasNonChat) {
      const decoded = canonicalRequest()
      if (Result.isFailure(decoded)) return yield* decoded.failure
      const request = decoded.success
      if (shape.hasNonChat || request.responseFormat !== undefined || request.untranslatable.length > 0) {
        const servable = servableSteps(steps, {
          capability: "chat",
          caller,
          responseFormat: request.responseFormat?.type,
          responseFormatParam: RESPONSE_FORMAT_PARAM[caller],
          untranslatable: request.untranslatable
        })
        if (Result.isFailure(servable)) return yield* servable.failure
        steps = servable.success
      }
    }

    // The response cache: a hit answers here; a miss notes where the answer will be kept.
    const caching = yield* planCaching(input, chosen, steps, json)
    if (caching !== undefined) {
      const entry = yield* trace.cacheLookup(caching.mode, cache.lookup(caching.scope, caching.key))
      const request = () => Result.getOrUndefined(canonicalRequest())
      const replayed = entry?.kind === "chat" ? replayChat(ctx, caller, input.stream, entry, request) : undefined
      if (replayed !== undefined) {
        ctx.log.cache = "hit"
        ctx.log.provider = entry?.provider
        return replayed
      }
      ctx.log.cache = "miss"
    }

    const keyFor = callerKeyPolicy(callerKey(headers))
    // Same-format bodies: the caller's bytes, with the model spliced in for an alias (once per
    // target model, reused by retries); re-serialized only when a variant changed parameters.
    // Made only when a target's model differs from the caller's (an alias): most requests never need it.
    let fastBodies: Map<string, string | Uint8Array> | undefined
    const fastBody = (model: string): string | Uint8Array => {
      if (model === input.model && !overridden) return input.raw
      fastBodies ??= new Map()
      let body = fastBodies.get(model)
      if (body === undefined) {
        body = (overridden ? undefined : replaceTopLevelModel(input.raw, input.model, model)) ?? JSON.stringify({ ...json, model })
        fastBodies.set(model, body)
      }
      return body
    }
    const { guard } = input.project
    // The output guardrail's verdict on an answer's text (up to 64 KB, docs/reference/gateway-spec.md §6.1.4), taken once.
    let verdict: { readonly of: ResponseCollector; readonly violation: Violation | undefined } | undefined
    const outputViolation = (answer: ResponseCollector): Violation | undefined => {
      if (verdict?.of !== answer) {
        verdict = { of: answer, violation: answer.text === "" ? undefined : guard.scanText(answer.text) }
        if (verdict.violation !== undefined) ctx.log.guardrail_output = verdict.violation
      }
      return verdict.violation
    }
    /**
     * A streamed answer is kept the moment its terminal event is decoded (the
     * collector calls this), not when the program ends: that waits for the
     * upstream to close its body, and a caller that leaves once it has the
     * last event cancels it. Only a whole answer no guardrail objected to.
     */
    const keepStreamed = caching === undefined ? undefined : (answer: ResponseCollector): void => {
      const response = answer.assembler?.result()
      if (response === undefined || (guard.output && outputViolation(answer) !== undefined)) return
      const entry = { kind: "chat" as const, response: () => response, storedAt: Date.now(), provider: ctx.log.provider ?? "" }
      // Outside the request's fiber (a decoder's callback); the store only starts a background write.
      Effect.runSync(cache.store(caching.scope, caching.key, entry, caching.ttlSeconds))
    }
    /** The collector of the latest attempt: what the log line reports (and the cache keeps). */
    const keepUpTo = caching?.scope.section.max_entry_size_bytes
    // The answer's text is read only by the output guardrail and GenAI content capture.
    const keepText = guard.output || telemetry.genAi.captureContent
    const tap = ctx.tapEvents === true
    let collector = new ResponseCollector(keepUpTo, keepText, keepStreamed, tap)
    const spend = new Spend(input.project.priceOf)
    /**
     * `on_stream_break = "continue"`: the seam of the latest attempt's stream, when a break of it
     * may be continued (a canonical request to ask with, and another target to ask).
     */
    let splice: StreamSplice | undefined
    /** The target of the latest attempt (the one a stream is continued from). */
    let latest: PlanTarget | undefined
    const spliceFor = (target: PlanTarget): StreamSplice | undefined => {
      if (!steps.some((step) => step.targets.some((other) => other.id !== target.id))) return undefined
      // Asked at the first break (or by the normalized path, which decoded the request already).
      return new StreamSplice(() => {
        const request = canonicalRequest()
        return Result.isFailure(request) || request.success.untranslatable.length > 0 ? undefined : callerCodec.streamEncoder(request.success)
      })
    }
    /** A target's provider request body for the canonical `request`, and the caller's fields it could not carry. */
    const translatedBody = (target: PlanTarget, request: ChatRequest) =>
      PROVIDER_CODECS[target.provider.family as WireFamily].encodeRequest(request, {
        model: target.model,
        callerFamily: caller === "responses" ? undefined : caller,
        defaultMaxTokens: target.maxTokens,
        maxTokensField: target.provider.maxTokensParam
      })

    const send = (
      provider: CompiledProvider,
      call: UpstreamCall,
      fast: boolean,
      extra: Record<string, string>,
      collector: ResponseCollector,
      splice: StreamSplice | undefined
    ) =>
      client.send(call).pipe(
        Effect.flatMap((response): Effect.Effect<Forwarded, UpstreamError, Scope.Scope> => {
          trace.responded()
          const source = { providerId: provider.id, family: provider.family }
          if (fast) {
            return isEventStream(response)
              ? forwardStream(ctx, caller, source, response, extra, chatStreamGate(caller, collector, splice))
              : forwardHeld(source, response, extra, chatJsonInspector(caller, collector))
          }
          const translation = {
            ctx,
            providerId: provider.id,
            providerFamily: provider.family,
            provider: PROVIDER_CODECS[provider.family as WireFamily],
            caller: callerCodec,
            request: Result.getOrThrow(canonicalRequest()),
            headers: extra,
            collector,
            splice
          }
          return input.stream ? translateStream(translation, response) : translateJson(translation, response)
        }),
        attemptScoped
      )

    /**
     * The request's state becomes `target`'s attempt's: its collector and stream seam (the
     * attempt before it priced with what it had). An attempt does so as it starts; a hedge,
     * once it won its race.
     */
    const adopt = (target: PlanTarget, own: ResponseCollector, ownSplice: StreamSplice | undefined): void => {
      spend.begin(target.model, collector.usage)
      collector = own
      splice = ownSplice
      latest = target
    }

    /** The log line's account of the attempt that answers (the latest one, or a hedge that won). */
    const noteAttempt = (target: PlanTarget, fast: boolean, dropped: string): void => {
      if (dropped !== "") ctx.log.dropped_params = dropped
      ctx.log.provider = target.provider.id
      ctx.log.upstream_model = target.model
      ctx.log.path_kind = fast ? "fast" : "normalized"
    }

    const attempt = (info: AttemptInfo): Effect.Effect<Forwarded, UpstreamError, Scope.Scope> => {
      const { target } = info
      const provider = target.provider
      const fast = speaksNatively(caller, provider)
      // Each attempt keeps its own collector (and its stream's seam); a hedge (started beside the
      // current attempt) takes over the request's state only once it answered.
      const own = new ResponseCollector(keepUpTo, keepText, keepStreamed, tap)
      const ownSplice = input.stream && target.continueOnBreak === true ? spliceFor(target) : undefined
      const hedge = info.hedge === "hedge"
      if (!hedge) adopt(target, own, ownSplice)
      const operation = fast && caller === "responses" ? "responses" : input.stream ? "chat_stream" : "chat"
      const providerRequest = provider.request(operation, target.model, keyFor(provider.origin))
      const refused = unauthenticatedCall(provider, providerRequest)
      if (refused !== undefined) return Effect.fail(refused).pipe(trace.attempt(info, undefined, () => undefined))
      let dropped = ""
      const auth = providerRequest.headers
      const extra: Record<string, string> = { "x-gw-upstream-provider": provider.id }
      let body: string | Uint8Array
      let callHeaders: Record<string, string>
      if (fast) {
        body = fastBody(target.model)
        callHeaders = passThroughHeaders(headers, auth, ctx.requestId)
        callHeaders["content-type"] ??= "application/json"
      } else {
        const encoded = translatedBody(target, Result.getOrThrow(canonicalRequest()))
        body = JSON.stringify(encoded.body)
        callHeaders = translatedHeaders(auth, ctx.requestId, input.stream)
        dropped = droppedHeader(encoded.dropped)
        if (dropped !== "") extra["x-gw-dropped-params"] = dropped
      }
      if (!hedge) noteAttempt(target, fast, dropped)
      const sent = send(provider, upstreamCall(target, providerRequest, callHeaders, body), fast, extra, own, ownSplice)
      // `ttft_ms`: a stream with no content in time fails before the commit (unset: `sent` as it is).
      const timed = firstContentWithin(sent, input.stream ? target.ttftMs : undefined, provider)
      return (hedge ? hedgeAttempt(timed, target, own, ownSplice, fast, dropped) : timed).pipe(trace.attempt(info, fast ? "fast" : "normalized", () => own.error))
    }

    /**
     * A hedge's attempt: it answered (it won its race), so its collector, log
     * fields and price are the request's from now on (the attempt it beat
     * priced with what it had); else its own usage, if any arrived, is priced.
     */
    const hedgeAttempt = <A, E, R>(
      timed: Effect.Effect<A, E, R>,
      target: PlanTarget,
      own: ResponseCollector,
      ownSplice: StreamSplice | undefined,
      fast: boolean,
      dropped: string
    ) =>
      onExitInPlace(timed, (exit) => {
        if (Exit.isFailure(exit)) spend.add(target.model, own.usage)
        else {
          adopt(target, own, ownSplice)
          noteAttempt(target, fast, dropped)
        }
        return undefined
      })

    /**
     * How a broken stream is continued: each other target of the plan in turn, asked on the
     * normalized path; each continuation is an attempt of its own in the trace and the log.
     */
    const continuation = (seam: StreamSplice, answer: ResponseCollector) => ({
      ctx,
      splice: seam,
      collector: answer,
      request: Result.getOrThrow(canonicalRequest()),
      targets: steps.flatMap((step) => step.targets).filter((target) => target.id !== latest?.id),
      codecOf: (target: PlanTarget) => PROVIDER_CODECS[target.provider.family as WireFamily],
      open: (target: PlanTarget, request: ChatRequest) => {
        const provider = target.provider
        const info: AttemptInfo = { attempt: (ctx.log.attempts ?? 1) + 1, target }
        ctx.log.attempts = info.attempt
        // What the calls so far used is priced at their model; this call's at its own.
        spend.continueAt(target.model, seam.usage)
        const providerRequest = provider.request("chat_stream", target.model, keyFor(provider.origin))
        const refused = unauthenticatedCall(provider, providerRequest)
        if (refused !== undefined) return Effect.fail(refused)
        const headers = translatedHeaders(providerRequest.headers, ctx.requestId, true)
        return client.send(upstreamCall(target, providerRequest, headers, JSON.stringify(translatedBody(target, request).body))).pipe(
          trace.attempt(info, "normalized", () => undefined)
        )
      },
      noted: (target: PlanTarget, outcome: "ok" | UpstreamError) => {
        const level = outcome === "ok" ? "info" : "warn"
        if (!log.enabled(level)) return
        log.log(level, "continuation", {
          request_id: ctx.requestId,
          attempt: ctx.log.attempts,
          target: target.id,
          provider: target.provider.id,
          outcome: outcome === "ok" ? "continued" : outcome.reason
        })
      }
    })

    /** What the log line and the GenAI record say of the answer, once it is over (a stream: once it ended). */
    const finish = (exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> => {
      // One vocabulary for every family (OpenAI Chat's), as docs/operations.md says.
      if (collector.stopReason !== undefined) ctx.log.finish_reason = OpenAiChat.finishReasonOf(collector.stopReason)
      if (collector.usage !== undefined) {
        ctx.log.input_tokens = collector.usage.inputTokens
        ctx.log.output_tokens = collector.usage.outputTokens
        if (collector.usage.cacheReadTokens !== undefined) ctx.log.cached_tokens = collector.usage.cacheReadTokens
        if (collector.usage.reasoningTokens !== undefined) ctx.log.reasoning_tokens = collector.usage.reasoningTokens
      }
      if (collector.firstTokenAt !== undefined) ctx.log.ttft_ms = Math.round((collector.firstTokenAt - ctx.startedAt) * 1000) / 1000
      if (collector.model !== undefined) ctx.log.upstream_model = collector.model
      spend.end(collector.usage)
      spend.note(ctx)
      // A stream that failed after its head keeps status 200; the log line still says it failed.
      if (collector.error !== undefined) ctx.log.error_code ??= collector.error
      return trace.record(() => ({
        operation: "chat",
        requestedModel: input.model,
        request: { format: caller, json, canonical: () => Result.getOrUndefined(canonicalRequest()) },
        stream: input.stream,
        response: {
          id: collector.id,
          model: collector.model,
          stopReason: collector.stopReason,
          usage: collector.usage,
          text: collector.text,
          toolCalls: collector.toolCalls
        },
        error: failureOf(exit) ?? collector.error,
        costUsd: spend.costUsd
      }), collector.firstTokenAt)
    }
    const forwarded = yield* onExitInPlace(
      executePlan(plan, steps, attempt, attemptLogger(ctx, log), HEDGING),
      // A stream's answer is over when its body ends: it is finished there.
      (exit) => (Exit.isSuccess(exit) && !isValueBody(exit.value.body) ? undefined : nothingLeft(finish(exit)))
    )
    let { body } = forwarded
    if (!isValueBody(body)) {
      if (splice !== undefined) {
        const seam = splice
        const answer = collector
        body = continueAfter(body, seam, () => continuation(seam, answer))
      }
      const { tapped } = collector
      const events = tapped === undefined ? undefined : { take: () => tapped.splice(0) }
      // The stream goes out as it comes: the output guardrail records its verdict once it ended (keepStreamed may have taken it already).
      const ended = guard.output
        ? ensuringBody(body, Effect.andThen(
          Effect.suspend(() => collector.text === "" ? Effect.void : Effect.asVoid(trace.guardrail("output", () => outputViolation(collector)))),
          Effect.suspend(() => finish(Exit.void))
        ))
        : onBodyExit(body, () => nothingLeft(finish(Exit.void)))
      return reply(forwarded.status, forwarded.headers, ended, events)
    }
    if (guard.output) {
      // A held answer is withheld when its text violates the guardrail.
      const violation = collector.text === "" ? undefined : yield* trace.guardrail("output", () => outputViolation(collector))
      if (violation !== undefined) return yield* outputViolationError(violation)
    }
    // Kept (the store returns at once; it writes in the background): only a whole, good answer (a violating one was refused above).
    const response = forwarded.status === 200 ? collector.final : undefined
    if (caching !== undefined && response !== undefined) {
      yield* cache.store(caching.scope, caching.key, {
        kind: "chat",
        response: () => response,
        body: { status: forwarded.status, contentType: String(forwarded.headers["content-type"] ?? JSON_CONTENT_TYPE), bytes: body },
        storedAt: Date.now(),
        provider: ctx.log.provider ?? ""
      }, caching.ttlSeconds)
    }
    return forwarded as Reply
  })
}

/** The upstream call of a chat attempt at `target`: its provider's request, with these headers and body. */
const upstreamCall = (
  target: PlanTarget,
  { path, secret, sign }: ProviderRequest,
  headers: Record<string, string>,
  body: string | Uint8Array
): UpstreamCall => ({
  providerId: target.provider.id,
  family: target.provider.family,
  origin: target.provider.origin,
  method: "POST",
  path,
  headers,
  body,
  idleTimeoutMs: target.timeoutMs,
  decode: true,
  secret,
  sign
})

/** How a request uses the cache: its scope, key and lifetime, or undefined when it does not. */
const planCaching = (input: ChatInput, chosen: ChosenPlan, steps: ReadonlyArray<PlanStep>, json: Readonly<Record<string, unknown>>) => {
  const { ctx, project } = input
  const section = project.settings.file.cache
  if (!section.enabled) return Effect.succeed(undefined)
  const decided = cacheUse(section, "chat", json, header(ctx, "x-gw-cache"), header(ctx, "x-gw-cache-ttl"))
  if (Result.isFailure(decided)) return Effect.fail(decided.failure)
  const use = decided.success
  if (use === undefined) return Effect.succeed(undefined)
  const credential = requestCredential(callerKey(ctx.req.headers), steps)
  const scope: CacheScope = { section, projectId: project.projectId, credential }
  const key = cacheKey({ projectId: project.projectId, credential, plan: chosen.resolved, overrides: chosen.overrides, format: input.caller, body: json })
  return Effect.succeed({ scope, key, ttlSeconds: use.ttlSeconds, mode: use.mode })
}
