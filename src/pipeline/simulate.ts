/**
 * Runs a request's routing exactly as the gateway does (resolution, variant
 * draw, steps, retries with backoff, failover, timeouts) against whatever
 * `ProviderClient` is provided, and reports every attempt. With the scripted
 * `layerTest` of src/providers/testing.ts (`scriptedProviders` in src/testing.ts)
 * and `TestClock` it tests a routing configuration
 * without sockets or real time (docs/testing-your-routing.md).
 *
 * Bodies are not translated here, but each successful response is read with
 * the gateway's own commit rule: a JSON body must arrive whole and parse; an
 * event stream (decoded in the provider's format) commits with its first
 * content or finish, so one that fails or breaks before that fails over and
 * one that breaks later does not. Targets that cannot serve the request are
 * skipped by the same rule as in the gateway.
 */
import { Clock, Effect, Result, Stream } from "effect"
import type { EndpointType } from "../config/index.ts"
import { classifyStreamError, commitsResponse, GatewayError, UpstreamError } from "../domain/index.ts"
import type { ChatStreamEvent, ErrorClass, FailureSource, WireFamily } from "../domain/index.ts"
import { PROVIDER_CODECS } from "../formats/index.ts"
import type { StreamDecoder } from "../formats/index.ts"
import type { Operation } from "../providers/adapter.ts"
import { SseParser } from "../providers/sse.ts"
import { ProviderClient } from "../providers/transport.ts"
import type { UpstreamResponse } from "../providers/transport.ts"
import { executePlan } from "../routing/execute.ts"
import type { PlanStep } from "../routing/plan.ts"
import { drawWeighted } from "../routing/sampler.ts"
import { servableSteps } from "../routing/servable.ts"
import type { RoutingTable } from "../routing/table.ts"
import { inBandFailure, isEventStream } from "./forward/index.ts"

export interface SimulatedRequest {
  readonly model: string
  readonly endpoint?: EndpointType | undefined
  /** `x-genai-provider` */
  readonly provider?: string | undefined
  /** `x-gw-experiment-key` */
  readonly experimentKey?: string | undefined
  /** The request body; variant overrides are merged into it. */
  readonly body?: Readonly<Record<string, unknown>> | undefined
}

export interface SimulatedAttempt {
  readonly attempt: number
  readonly target: string
  readonly provider: string
  readonly model: string
  /** Virtual (or real) time the attempt started, ms since the simulation began. */
  readonly startedAtMs: number
  readonly outcome: "ok" | ErrorClass
  readonly status?: number | undefined
  readonly timedOut?: boolean | undefined
}

export interface SimulationResult {
  readonly plan: string
  readonly variant?: string | undefined
  /** The body sent upstream by the last attempt (variant overrides applied). */
  readonly body: Readonly<Record<string, unknown>>
  readonly attempts: ReadonlyArray<SimulatedAttempt>
  /** The answer: which provider served it, or the error the caller gets. */
  readonly outcome:
    | { readonly _tag: "Served"; readonly provider: string; readonly target: string; readonly midStreamFailure?: ErrorClass | undefined }
    | { readonly _tag: "Failed"; readonly error: UpstreamError }
}

const OPERATION: Record<EndpointType, Operation> = {
  chat: "chat",
  embeddings: "embeddings",
  audio_speech: "audio_speech",
  audio_transcription: "audio_transcription",
  image_generation: "image_generation"
}

export const simulateRequest = (
  table: RoutingTable,
  request: SimulatedRequest
): Effect.Effect<SimulationResult, GatewayError, ProviderClient> =>
  Effect.gen(function*() {
    const client = yield* ProviderClient
    const endpoint = request.endpoint ?? "chat"
    const resolved = table.resolve(request.model, request.provider, endpoint)
    if (Result.isFailure(resolved)) return yield* resolved.failure
    const plan = resolved.success
    let steps: ReadonlyArray<PlanStep> = plan.steps
    let body: Readonly<Record<string, unknown>> = request.body ?? { model: request.model }
    let variant: string | undefined
    if (plan.variants !== undefined) {
      const drawn = yield* drawWeighted(plan.variants, request.experimentKey)
      steps = drawn.steps
      body = { ...body, ...drawn.overrides }
      variant = drawn.name
    }
    const format = (body.response_format as { readonly type?: unknown } | undefined)?.type
    const servable = servableSteps(steps, { capability: endpoint, responseFormat: typeof format === "string" ? format : undefined })
    if (Result.isFailure(servable)) return yield* servable.failure
    steps = servable.success
    const began = yield* Clock.currentTimeMillis
    const attempts: Array<SimulatedAttempt> = []
    let sentBody = body
    let midStreamFailure: ErrorClass | undefined
    const served = yield* executePlan(plan, steps, ({ attempt, target }) =>
      Effect.scoped(Effect.gen(function*() {
        const startedAtMs = (yield* Clock.currentTimeMillis) - began
        sentBody = { ...body, model: target.model }
        const { path, headers } = target.provider.request(OPERATION[endpoint], target.model)
        const record = (outcome: "ok" | UpstreamError) =>
          attempts.push({
            attempt,
            target: target.id,
            provider: target.provider.id,
            model: target.model,
            startedAtMs,
            outcome: outcome === "ok" ? "ok" : outcome.reason,
            status: outcome === "ok" ? undefined : outcome.upstreamStatus,
            timedOut: outcome === "ok" ? undefined : outcome.timedOut
          })
        const response = yield* client.send({
          providerId: target.provider.id,
          family: target.provider.family,
          origin: target.provider.origin,
          method: "POST",
          path,
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify(sentBody),
          idleTimeoutMs: target.timeoutMs
        }).pipe(Effect.tapError((error) => Effect.sync(() => record(error))))
        const source = { providerId: target.provider.id, family: target.provider.family }
        const broken = yield* readCommitted(source, response).pipe(Effect.tapError((error) => Effect.sync(() => record(error))))
        midStreamFailure = broken
        record("ok")
        return target
      }))
    ).pipe(Effect.result)
    return {
      plan: plan.name,
      variant,
      body: sentBody,
      attempts,
      outcome: served._tag === "Success"
        ? { _tag: "Served", provider: served.success.provider.id, target: served.success.id, midStreamFailure }
        : { _tag: "Failed", error: served.failure }
    } satisfies SimulationResult
  })

const STREAM_LIMIT = 32 * 1024 * 1024

const decoderOf = (source: FailureSource): StreamDecoder | undefined =>
  source.family === "other" ? undefined : PROVIDER_CODECS[source.family as WireFamily].streamDecoder()

/**
 * Reads a successful response as the gateway would before answering: fails
 * while nothing would have reached the caller; afterwards a break is only
 * reported (the classification of a mid-stream failure), as the caller would
 * see it in the stream's error frame.
 */
const readCommitted = (source: FailureSource, response: UpstreamResponse): Effect.Effect<ErrorClass | undefined, UpstreamError> => {
  if (!isEventStream(response)) {
    return Effect.flatMap(response.body.readAll(STREAM_LIMIT), (bytes) => {
      try {
        JSON.parse(Buffer.from(bytes).toString("utf8"))
        return Effect.succeed(undefined)
      } catch {
        return Effect.fail(UpstreamError.fault(source, "upstream sent a response that is not valid JSON", { status: response.status }))
      }
    })
  }
  const parser = new SseParser()
  const decoder = decoderOf(source)
  let committed = decoder === undefined
  let broken: ErrorClass | undefined
  const take = (events: ReadonlyArray<ChatStreamEvent>): Effect.Effect<void, UpstreamError> => {
    for (const event of events) {
      if (event.type === "error") {
        if (!committed) return Effect.fail(inBandFailure(source, event.error))
        broken ??= classifyStreamError(event.error)
      } else if (commitsResponse(event)) {
        committed = true
      }
    }
    return Effect.void
  }
  const decode = (chunk: Uint8Array) => parser.push(chunk).flatMap((sse) => decoder?.push(sse) ?? [])
  return response.body.stream.pipe(
    Stream.runForEach((chunk) => take(decode(chunk))),
    Effect.flatMap(() => take([...parser.end().flatMap((sse) => decoder?.push(sse) ?? []), ...(decoder?.end() ?? [])])),
    Effect.catch((error: UpstreamError) => {
      if (!committed) return Effect.fail(error)
      broken ??= error.reason
      return Effect.void
    }),
    Effect.map(() => broken)
  )
}
