/**
 * Exporter failure is never a request failure, and never a flood of log lines:
 * a collector that is down, slow or refusing shows up as at most one `warn`
 * line every 10 seconds per source (`traces`, `genai spans`, `genai
 * metrics`…, with the count of failures it stands for), whatever the request
 * rate. Each source has its own interval and count: one source's failures
 * never hide another's or land in its count.
 *
 * Details
 * - Failed exports and spans dropped from a full queue are reported here;
 *   requests never wait for an export.
 * - Messages are cut to 300 characters and any `Bearer …` value is masked:
 *   an error text must not carry a collector credential into the log.
 */
import type { JsonLog } from "../../infra/log.ts"

const EXPORT_ERROR_INTERVAL_MS = 10_000

const describe = (error: unknown): string => {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error) ?? String(error)
  return text.replace(/bearer\s+\S+/gi, "Bearer [redacted]").slice(0, 300)
}

interface SourceThrottle {
  lastAt: number
  suppressed: number
}

/** Logs telemetry failures at most once per interval and source, counting the ones it held back. */
export class ExportErrorLog {
  /** By source: a handful of fixed names, so the map stays small. */
  private readonly sources = new Map<string, SourceThrottle>()
  private readonly log: JsonLog
  private readonly intervalMs: number

  constructor(log: JsonLog, intervalMs: number = EXPORT_ERROR_INTERVAL_MS) {
    this.log = log
    this.intervalMs = intervalMs
  }

  report(source: string, error: unknown): void {
    let throttle = this.sources.get(source)
    if (throttle === undefined) {
      throttle = { lastAt: Number.NEGATIVE_INFINITY, suppressed: 0 }
      this.sources.set(source, throttle)
    }
    const now = performance.now()
    if (now - throttle.lastAt < this.intervalMs) {
      throttle.suppressed++
      return
    }
    throttle.lastAt = now
    const suppressed = throttle.suppressed
    throttle.suppressed = 0
    this.log.log("warn", "telemetry export failed", { source, error: describe(error), suppressed })
  }
}
