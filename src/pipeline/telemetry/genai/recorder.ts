/**
 * Writes GenAI calls (call.ts) as OTLP spans and metrics, one export
 * pipeline per credential, so spans and metrics exported with different
 * platform tokens never share an export call.
 *
 * Details
 * - A pipeline (a span export queue and the call metrics, both sent with its
 *   credential) is made on a credential's first call and kept while it is
 *   used. The span queues of all pipelines share one byte bound. At most `MAX_PIPELINES` live at once (the least recently used is
 *   closed for a new one); a pipeline idle for `IDLE_MS`, or whose token is
 *   about to expire, is flushed and closed by a sweep. Closing happens in the
 *   background.
 * - Spans are sampled by `sample_ratio` on the trace id (not by the parent's
 *   decision: the application trace's 10 % must not thin out model calls).
 * - Recording is synchronous and cheap: the span is encoded into its queue as
 *   the call ends, the metrics are added to their series. Exports are
 *   batched; metrics leave every `metrics_export_interval_secs` (cumulative).
 */
import { exportRequest, requestHead, writeAttributes } from "../../../otlp/common.ts"
import type { RequestHead } from "../../../otlp/common.ts"
import { ProtoWriter } from "../../../otlp/protobuf.ts"
import { ByteBudget, ExportQueue } from "../../../otlp/queue.ts"
import { beginSpan, endSpan, SPAN_ATTRIBUTES, SPAN_KIND, STATUS_CODE } from "../../../otlp/trace.ts"
import { exportDelayOf } from "../settings.ts"
import type { ExportCredential, TelemetrySettings, TelemetrySinks } from "../settings.ts"
import { genAiCallAttributes, genAiIdentityAttributes, genAiIdentityKey, genAiSpanName, identityOf, sameIdentity } from "./call.ts"
import type { GenAiCall } from "./call.ts"
import { drawn, sampledTrace } from "../sampling.ts"
import { GenAiMetrics } from "./metrics.ts"
import { epochNanos } from "../clock.ts"

export const MAX_PIPELINES = 128
export const IDLE_MS = 5 * 60_000
const SWEEP_MS = 30_000
/** A token's pipeline is closed this long before the token expires, so its last export still authenticates. */
const EXPIRY_MARGIN_MS = 5_000
const CLOSE_TIMEOUT_MS = 5_000

/** Bounds of each pipeline's span queue: one per token, so smaller than the application trace's. */
const QUEUE = { maxQueued: 2048, maxQueuedBytes: 16 * 1024 * 1024, maxBatch: 512, maxBatchBytes: 3 * 1024 * 1024 }
/** What the span queues of every pipeline hold together at most (spans with content are up to ~130 KB each). */
const ALL_QUEUES_BYTES = 64 * 1024 * 1024

const SCOPE = "gateway-genai"
const MAX_IDENTITIES = 4096

/** What failed: recording a call, or exporting its spans or metrics (the `source` of the log line). */
export type GenAiFailureSource = "genai record" | "genai spans" | "genai metrics"

/** The trace the GenAI span joins: the span the request runs in, or the caller's. */
export interface GenAiParent {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
  readonly remote: boolean
  /** The W3C `tracestate` of the trace ("" for none), which the GenAI span carries like every span of it. */
  readonly traceState: string
}

interface Pipeline {
  readonly spans: ExportQueue
  readonly metrics: GenAiMetrics | undefined
  /** Epoch nanoseconds the cumulative metrics count from. */
  readonly startNs: bigint
  readonly sendMetrics: (request: Buffer) => Promise<void>
  readonly stopCollecting: () => void
  /** Epoch ms after which the pipeline must be closed (its token expires). */
  readonly closeAt: number
  lastUsed: number
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
  private readonly exporter: ReturnType<typeof setInterval> | undefined
  private readonly settings: TelemetrySettings
  private readonly sinks: TelemetrySinks
  /** The resource and scope of every export (spans and metrics alike). */
  private readonly head: RequestHead
  private readonly scratch = new ProtoWriter(4096)
  private readonly identities = new Map<string, Uint8Array>()
  /** The identity encoded last and the call it was for (identity fields only): most calls repeat it, found without a key. */
  private lastIdentity: { readonly call: GenAiCall; readonly encoded: Uint8Array } | undefined
  private readonly budget = new ByteBudget(ALL_QUEUES_BYTES)
  /** The key of the pipeline used last (already last in the map's order). */
  private mostRecent: string | undefined
  /** Called with any error recording or exporting raised, and where (recording never throws into a request). */
  private readonly onError: (source: GenAiFailureSource, error: unknown) => void
  private readonly spanFailure = (error: unknown): void => this.onError("genai spans", error)
  private readonly metricsFailure = (error: unknown): void => this.onError("genai metrics", error)

  constructor(
    settings: TelemetrySettings,
    sinks: TelemetrySinks,
    resource: Readonly<Record<string, unknown>>,
    onError: (source: GenAiFailureSource, error: unknown) => void
  ) {
    this.settings = settings
    this.sinks = sinks
    this.onError = onError
    this.head = requestHead(resource, SCOPE)
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_MS)
    this.sweeper.unref()
    if (settings.genai.metrics_enabled && sinks.collectOnDemand === undefined) {
      this.exporter = setInterval(() => this.exportMetrics(), settings.genai.metrics_export_interval_secs * 1000)
      this.exporter.unref()
    }
  }

  /** Records one call; `credential` picks the export pipeline. Never throws. */
  record(call: GenAiCall, parent: GenAiParent | undefined, credential: ExportCredential | undefined): void {
    try {
      const pipeline = this.pipelineFor(credential)
      const { genai } = this.settings
      // A call in a trace follows the trace's draw (by its id); a new trace is a new draw.
      if (parent === undefined ? drawn(genai.sample_ratio) : sampledTrace(parent.traceId, genai.sample_ratio)) {
        const w = pipeline.spans.open()
        if (w !== undefined) {
          const remoteParent = parent?.remote ?? false
          const start = beginSpan(w, {
            traceId: parent?.traceId ?? "",
            spanId: "",
            parentSpanId: parent?.spanId ?? "",
            remoteParent,
            traceState: parent?.traceState ?? "",
            name: genAiSpanName(call),
            kind: SPAN_KIND.client,
            startNs: epochNanos(call.timing.startedAt),
            endNs: epochNanos(call.timing.endedAt)
          })
          w.raw(this.identityOf(call))
          writeAttributes(w, SPAN_ATTRIBUTES, genAiCallAttributes(call, genai.capture_content))
          endSpan(w, start, call.error === undefined ? STATUS_CODE.unset : STATUS_CODE.error, call.error ?? "", remoteParent)
          pipeline.spans.commit()
        }
      }
      pipeline.metrics?.record(call)
    } catch (error) {
      this.onError("genai record", error)
    }
  }

  /** The encoded identity attributes of a call (call.ts `genAiIdentityAttributes`), encoded once per identity. */
  private identityOf(call: GenAiCall): Uint8Array {
    const last = this.lastIdentity
    if (last !== undefined && sameIdentity(last.call, call)) return last.encoded
    const encoded = this.encodedIdentity(call)
    this.lastIdentity = { call: identityOf(call), encoded }
    return encoded
  }

  private encodedIdentity(call: GenAiCall): Uint8Array {
    const key = genAiIdentityKey(call)
    let encoded = this.identities.get(key)
    if (encoded === undefined) {
      const w = this.scratch
      w.reset()
      writeAttributes(w, SPAN_ATTRIBUTES, genAiIdentityAttributes(call))
      encoded = w.bytes()
      // Identities come from the configuration (targets, routes, projects): few, but bound the map anyway.
      if (this.identities.size >= MAX_IDENTITIES) this.identities.clear()
      this.identities.set(key, encoded)
    }
    return encoded
  }

  /** Exports everything recorded so far (bounded wait). */
  async flush(): Promise<void> {
    await Promise.all([...this.pipelines.values()].map((pipeline) => bounded(Promise.all([pipeline.spans.flush(), this.sendMetricsOf(pipeline)]))))
  }

  /** Flushes and closes every pipeline (bounded wait). */
  async shutdown(): Promise<void> {
    clearInterval(this.sweeper)
    if (this.exporter !== undefined) clearInterval(this.exporter)
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

  /** The metrics of a pipeline as one export request, or undefined when it has recorded none. */
  private collect(pipeline: Pick<Pipeline, "metrics" | "startNs">): Buffer | undefined {
    const metrics = pipeline.metrics
    if (metrics === undefined || metrics.empty) return undefined
    const w = this.scratch
    w.reset()
    metrics.write(w, pipeline.startNs, epochNanos(performance.now()))
    return exportRequest(this.head, w.buf.subarray(0, w.pos))
  }

  private sendMetricsOf(pipeline: Pipeline): Promise<void> {
    if (this.sinks.collectOnDemand !== undefined) return Promise.resolve()
    const request = this.collect(pipeline)
    if (request === undefined) return Promise.resolve()
    return pipeline.sendMetrics(request).catch(this.metricsFailure)
  }

  private exportMetrics(): void {
    for (const pipeline of this.pipelines.values()) void this.sendMetricsOf(pipeline)
  }

  private pipelineFor(credential: ExportCredential | undefined): Pipeline {
    const key = credential?.fingerprint ?? STATIC_KEY
    const now = Date.now()
    let pipeline = this.pipelines.get(key)
    if (pipeline === undefined) {
      if (this.pipelines.size >= MAX_PIPELINES) this.close(this.pipelines.keys().next().value!)
      pipeline = this.open(credential, now)
      this.pipelines.set(key, pipeline)
    } else if (key !== this.mostRecent) {
      // Re-inserted: the map's order is least recently used first.
      this.pipelines.delete(key)
      this.pipelines.set(key, pipeline)
    }
    this.mostRecent = key
    pipeline.lastUsed = now
    return pipeline
  }

  private open(credential: ExportCredential | undefined, now: number): Pipeline {
    const { sinks } = this
    const spans = new ExportQueue({ ...QUEUE, delayMs: exportDelayOf(this.settings), budget: this.budget, head: this.head, send: sinks.genAi(credential, "traces"), immediate: sinks.immediate, onFailure: this.spanFailure })
    const closeAt = credential?.expiresAt === undefined ? Number.POSITIVE_INFINITY : credential.expiresAt - EXPIRY_MARGIN_MS
    const metrics = this.settings.genai.metrics_enabled ? new GenAiMetrics() : undefined
    const startNs = epochNanos(performance.now())
    const collectOnDemand = metrics === undefined ? undefined : sinks.collectOnDemand
    return {
      spans,
      metrics,
      startNs,
      sendMetrics: sinks.genAi(credential, "metrics"),
      stopCollecting: collectOnDemand === undefined ? () => {} : collectOnDemand(credential, () => this.collect({ metrics, startNs })),
      closeAt,
      lastUsed: now
    }
  }

  private close(key: string): void {
    const pipeline = this.pipelines.get(key)
    if (pipeline === undefined) return
    this.pipelines.delete(key)
    if (key === this.mostRecent) this.mostRecent = undefined
    const closed = bounded(Promise.all([pipeline.spans.close(), this.sendMetricsOf(pipeline)])).then(pipeline.stopCollecting)
    this.closing.add(closed)
    void closed.then(() => this.closing.delete(closed))
  }
}
