/**
 * Writes GenAI calls (call.ts) to their own tracer and meter providers, one
 * pair per export credential, so spans and metrics exported with different
 * platform tokens never share an export call.
 *
 * Details
 * - A pipeline (tracer provider + meter provider + their exporters) is made on
 *   a credential's first call and kept while it is used. At most
 *   `MAX_PIPELINES` live at once (the least recently used is closed for a new
 *   one); a pipeline idle for `IDLE_MS`, or whose token is about to expire, is
 *   flushed and shut down by a sweep. Closing happens in the background.
 * - Spans are sampled by `sample_ratio` on the trace id (not by the parent's
 *   decision: the application trace's 10 % must not thin out model calls).
 * - Recording is synchronous and cheap (a span started and ended with the
 *   call's own times, three histogram records); exporting is batched.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api"
import type { Attributes as OtelAttributes, Histogram, SpanContext, Tracer as OtelTracer } from "@opentelemetry/api"
import { millisToHrTime } from "@opentelemetry/core"
import type { Resource } from "@opentelemetry/resources"
import { MeterProvider } from "@opentelemetry/sdk-metrics"
import { TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base"
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node"
import type { ExportCredential, TelemetrySettings, TelemetrySinks } from "../settings.ts"
import { BUCKETS, ERROR_TYPE, GEN_AI, METRIC } from "./attributes.ts"
import { genAiSpanData, timeToFirstTokenOf } from "./call.ts"
import type { GenAiCall } from "./call.ts"

export const MAX_PIPELINES = 128
export const IDLE_MS = 5 * 60_000
const SWEEP_MS = 30_000
/** A token's pipeline is closed this long before the token expires, so its last export still authenticates. */
const EXPIRY_MARGIN_MS = 5_000
const CLOSE_TIMEOUT_MS = 5_000

const SCOPE = "gateway-genai"

interface Instruments {
  readonly tokenUsage: Histogram
  readonly duration: Histogram
  readonly timeToFirstToken: Histogram
}

interface Pipeline {
  readonly tracer: OtelTracer
  readonly tracerProvider: NodeTracerProvider
  readonly meterProvider: MeterProvider | undefined
  readonly instruments: Instruments | undefined
  /** Epoch ms after which the pipeline must be closed (its token expires). */
  readonly closeAt: number
  lastUsed: number
}

/** The trace the GenAI span joins: the span the request runs in, or the caller's. */
export interface GenAiParent {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
  readonly remote: boolean
}

const STATIC_KEY = "static"

/** Bounded wait for a promise (closing a pipeline must not hang on a collector that does not answer). */
const bounded = (promise: Promise<unknown>): Promise<void> =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)
    timer.unref()
    promise.then(() => undefined, () => undefined).then(() => {
      clearTimeout(timer)
      resolve()
    })
  })

export class GenAiRecorder {
  private readonly pipelines = new Map<string, Pipeline>()
  private readonly closing = new Set<Promise<void>>()
  private readonly sweeper: ReturnType<typeof setInterval>
  private readonly sampler: TraceIdRatioBasedSampler
  private readonly settings: TelemetrySettings
  private readonly sinks: TelemetrySinks
  private readonly resource: Resource
  /** Called with any error recording raised (recording never throws into a request). */
  private readonly onError: (error: unknown) => void

  constructor(settings: TelemetrySettings, sinks: TelemetrySinks, resource: Resource, onError: (error: unknown) => void) {
    this.settings = settings
    this.sinks = sinks
    this.resource = resource
    this.onError = onError
    this.sampler = new TraceIdRatioBasedSampler(settings.genai.sample_ratio)
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_MS)
    this.sweeper.unref()
  }

  /** Records one call; `credential` picks the export pipeline. Never throws. */
  record(call: GenAiCall, parent: GenAiParent | undefined, credential: ExportCredential | undefined): void {
    try {
      const pipeline = this.pipelineFor(credential)
      const data = genAiSpanData(call, this.settings.genai.capture_content)
      const context = parent === undefined
        ? ROOT_CONTEXT
        : trace.setSpanContext(ROOT_CONTEXT, {
          traceId: parent.traceId,
          spanId: parent.spanId,
          traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
          isRemote: parent.remote
        } satisfies SpanContext)
      const span = pipeline.tracer.startSpan(data.name, {
        kind: SpanKind.CLIENT,
        startTime: millisToHrTime(performance.timeOrigin + call.timing.startedAt),
        attributes: data.attributes as OtelAttributes
      }, context)
      if (call.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: call.error })
      span.end(millisToHrTime(performance.timeOrigin + call.timing.endedAt))

      const instruments = pipeline.instruments
      if (instruments === undefined) return
      const attributes = data.metricAttributes as OtelAttributes
      const seconds = Math.max(0, call.timing.endedAt - call.timing.startedAt) / 1000
      instruments.duration.record(seconds, call.error === undefined ? attributes : { ...attributes, [ERROR_TYPE]: call.error })
      const usage = call.response?.usage
      if (usage !== undefined) {
        instruments.tokenUsage.record(usage.inputTokens, { ...attributes, [GEN_AI.tokenType]: "input" })
        // Embeddings produce no output tokens (the conventions record only input tokens for them).
        if (call.operation !== "embeddings") instruments.tokenUsage.record(usage.outputTokens, { ...attributes, [GEN_AI.tokenType]: "output" })
      }
      const ttft = timeToFirstTokenOf(call)
      if (ttft !== undefined) instruments.timeToFirstToken.record(ttft, attributes)
    } catch (error) {
      this.onError(error)
    }
  }

  /** Exports everything recorded so far (bounded wait). */
  async flush(): Promise<void> {
    await Promise.all([...this.pipelines.values()].map((pipeline) =>
      bounded(Promise.all([pipeline.tracerProvider.forceFlush(), pipeline.meterProvider?.forceFlush()]))
    ))
  }

  /** Flushes and closes every pipeline (bounded wait). */
  async shutdown(): Promise<void> {
    clearInterval(this.sweeper)
    for (const key of [...this.pipelines.keys()]) this.close(key)
    await Promise.all(this.closing)
  }

  /** How many pipelines are open (one per credential in use). */
  get size(): number {
    return this.pipelines.size
  }

  /** Closes pipelines idle for `IDLE_MS` or whose token is about to expire. */
  sweep(now: number): void {
    for (const [key, pipeline] of this.pipelines) {
      if (now - pipeline.lastUsed >= IDLE_MS || now >= pipeline.closeAt) this.close(key)
    }
  }

  private pipelineFor(credential: ExportCredential | undefined): Pipeline {
    const key = credential?.fingerprint ?? STATIC_KEY
    const now = Date.now()
    let pipeline = this.pipelines.get(key)
    if (pipeline === undefined) {
      if (this.pipelines.size >= MAX_PIPELINES) this.close(this.pipelines.keys().next().value!)
      pipeline = this.open(credential, now)
    } else {
      // Re-inserted: the map's order is least recently used first.
      this.pipelines.delete(key)
    }
    pipeline.lastUsed = now
    this.pipelines.set(key, pipeline)
    return pipeline
  }

  private open(credential: ExportCredential | undefined, now: number): Pipeline {
    const { genai } = this.settings
    const tracerProvider = new NodeTracerProvider({
      resource: this.resource,
      sampler: this.sampler,
      spanProcessors: [this.sinks.genAiSpanProcessor(credential)]
    })
    let meterProvider: MeterProvider | undefined
    let instruments: Instruments | undefined
    if (genai.metrics_enabled) {
      meterProvider = new MeterProvider({ resource: this.resource, readers: [this.sinks.genAiMetricReader(credential)] })
      const meter = meterProvider.getMeter(SCOPE)
      instruments = {
        tokenUsage: meter.createHistogram(METRIC.tokenUsage, {
          unit: "{token}",
          description: "Number of input and output tokens used.",
          advice: { explicitBucketBoundaries: [...BUCKETS.tokenUsage] }
        }),
        duration: meter.createHistogram(METRIC.operationDuration, {
          unit: "s",
          description: "GenAI operation duration.",
          advice: { explicitBucketBoundaries: [...BUCKETS.operationDuration] }
        }),
        timeToFirstToken: meter.createHistogram(METRIC.timeToFirstToken, {
          unit: "s",
          description: "Time from the start of the response to the first content token of a stream.",
          advice: { explicitBucketBoundaries: [...BUCKETS.timeToFirstToken] }
        })
      }
    }
    const closeAt = credential?.expiresAt === undefined ? Number.POSITIVE_INFINITY : credential.expiresAt - EXPIRY_MARGIN_MS
    return { tracer: tracerProvider.getTracer(SCOPE), tracerProvider, meterProvider, instruments, closeAt, lastUsed: now }
  }

  private close(key: string): void {
    const pipeline = this.pipelines.get(key)
    if (pipeline === undefined) return
    this.pipelines.delete(key)
    const closed = bounded(Promise.all([
      pipeline.tracerProvider.forceFlush().finally(() => pipeline.tracerProvider.shutdown()),
      pipeline.meterProvider?.shutdown()
    ]))
    this.closing.add(closed)
    void closed.then(() => this.closing.delete(closed))
  }
}
