/**
 * Exporter failure is never a request failure, and never a flood of log lines:
 * a collector that is down, slow or refusing shows up as at most one `warn`
 * line every 10 seconds (with the count of failures it stands for), whatever
 * the request rate.
 *
 * Details
 * - Every exporter the telemetry creates is wrapped so its failed exports are
 *   reported here; spans and metrics are dropped by the SDK's bounded queues,
 *   requests never wait for an export.
 * - OpenTelemetry's own diagnostics (`diag`, the global error handler) and
 *   grpc-js's logger are process-wide: `installDiagnostics` routes them here
 *   too, so nothing prints to the console behind the structured log.
 * - Messages are cut to 300 characters and any `Bearer …` value is masked:
 *   an error text must not carry a collector credential into the log.
 */
import * as grpc from "@grpc/grpc-js"
import { diag, DiagLogLevel } from "@opentelemetry/api"
import type { DiagLogger } from "@opentelemetry/api"
import { ExportResultCode, setGlobalErrorHandler } from "@opentelemetry/core"
import type { ExportResult } from "@opentelemetry/core"
import type { PushMetricExporter, ResourceMetrics } from "@opentelemetry/sdk-metrics"
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base"
import type { JsonLog } from "./log.ts"

const EXPORT_ERROR_INTERVAL_MS = 10_000

const describe = (error: unknown): string => {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error) ?? String(error)
  return text.replace(/bearer\s+\S+/gi, "Bearer [redacted]").slice(0, 300)
}

/** Logs telemetry failures at most once per interval, counting the ones it held back. */
export class ExportErrorLog {
  private lastAt = Number.NEGATIVE_INFINITY
  private suppressed = 0
  private readonly log: JsonLog
  private readonly intervalMs: number

  constructor(log: JsonLog, intervalMs: number = EXPORT_ERROR_INTERVAL_MS) {
    this.log = log
    this.intervalMs = intervalMs
  }

  report(source: string, error: unknown): void {
    const now = performance.now()
    if (now - this.lastAt < this.intervalMs) {
      this.suppressed++
      return
    }
    this.lastAt = now
    const suppressed = this.suppressed
    this.suppressed = 0
    this.log.log("warn", "telemetry export failed", { source, error: describe(error), suppressed })
  }
}

const failed = (result: ExportResult): boolean => result.code !== ExportResultCode.SUCCESS

/** A span exporter whose failed exports are reported (and otherwise behave as the inner one's). */
export const reportingSpanExporter = (inner: SpanExporter, source: string, errors: ExportErrorLog): SpanExporter => ({
  export: (spans: Array<ReadableSpan>, done: (result: ExportResult) => void) =>
    inner.export(spans, (result) => {
      if (failed(result)) errors.report(source, result.error ?? "export failed")
      done(result)
    }),
  shutdown: () => inner.shutdown(),
  forceFlush: () => inner.forceFlush?.() ?? Promise.resolve()
})

/** A metric exporter whose failed exports are reported; temporality and aggregation are the inner one's. */
export const reportingMetricExporter = (inner: PushMetricExporter, source: string, errors: ExportErrorLog): PushMetricExporter => {
  const exporter: PushMetricExporter = {
    export: (metrics: ResourceMetrics, done: (result: ExportResult) => void) =>
      inner.export(metrics, (result) => {
        if (failed(result)) errors.report(source, result.error ?? "export failed")
        done(result)
      }),
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown()
  }
  if (inner.selectAggregationTemporality !== undefined) exporter.selectAggregationTemporality = (type) => inner.selectAggregationTemporality!(type)
  if (inner.selectAggregation !== undefined) exporter.selectAggregation = (type) => inner.selectAggregation!(type)
  return exporter
}

/** Where process-wide diagnostics go: the latest installed log, or nowhere. */
const installed: Array<ExportErrorLog> = []
const current = (): ExportErrorLog | undefined => installed[installed.length - 1]

const reportDiag = (message: string, ...args: Array<unknown>): void =>
  current()?.report("opentelemetry", args.length > 0 ? `${message} ${args.map(describe).join(" ")}` : message)

const diagLogger: DiagLogger = {
  error: reportDiag,
  warn: reportDiag,
  info: () => {},
  debug: () => {},
  verbose: () => {}
}

const grpcLogger: Partial<Console> = {
  error: (...args: Array<unknown>) => current()?.report("grpc", args.map(describe).join(" ")),
  info: () => {},
  debug: () => {}
}

/**
 * Routes OpenTelemetry's diagnostics and global error handler, and grpc-js's
 * logger, to `errors` (throttled) instead of the console. Returns the
 * uninstaller; the previous installation (if any) takes over again.
 */
export const installDiagnostics = (errors: ExportErrorLog): (() => void) => {
  if (installed.length === 0) {
    diag.setLogger(diagLogger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true })
    setGlobalErrorHandler((error) => current()?.report("opentelemetry", error))
    grpc.setLogger(grpcLogger)
    grpc.setLogVerbosity(grpc.logVerbosity.ERROR)
  }
  installed.push(errors)
  return () => {
    const at = installed.lastIndexOf(errors)
    if (at !== -1) installed.splice(at, 1)
  }
}
