/**
 * The start-up check of the collectors: telemetry is on by default and sends
 * to `http://localhost:4317`, where often nothing listens. Once at start, each
 * collector that takes no connection gets one `warn` line saying what is on,
 * where it sends, and how to point it elsewhere or turn it off; from then on
 * only the throttled export failures speak (export-errors.ts).
 *
 * Runs in the background: the gateway serves while it waits.
 */
import { Effect } from "effect"
import type { JsonLog } from "../../infra/log.ts"
import type { TelemetrySettings } from "./settings.ts"
import type { CollectorState } from "./shape.ts"

interface Collector {
  /** What goes there: `traces`, `genai spans`, `genai metrics`. */
  readonly sends: Array<string>
  /** How to point it elsewhere or turn it off, per section that sends there. */
  readonly hints: Array<string>
}

const TRACES_HINT =
  "[telemetry] otlp_endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) names the collector; [telemetry] enabled = false (GATEWAY_TELEMETRY_ENABLED=false) turns traces off"
const GENAI_HINT =
  "[genai_telemetry] otlp_endpoint (GATEWAY_GENAI_OTLP_ENDPOINT) names the collector; [genai_telemetry] enabled = false (GATEWAY_GENAI_TELEMETRY_ENABLED=false) turns GenAI telemetry off"

/** The collectors the sections that are on send to, by URL. */
const collectorsOf = ({ telemetry, genai }: TelemetrySettings): Map<string, Collector> => {
  const collectors = new Map<string, Collector>()
  const add = (url: string, sends: ReadonlyArray<string>, hint: string) => {
    const collector = collectors.get(url) ?? { sends: [], hints: [] }
    collector.sends.push(...sends)
    collector.hints.push(hint)
    collectors.set(url, collector)
  }
  if (telemetry.enabled) add(telemetry.otlp_endpoint, ["traces"], TRACES_HINT)
  if (genai.enabled) add(genai.otlp_endpoint, genai.metrics_enabled ? ["genai spans", "genai metrics"] : ["genai spans"], GENAI_HINT)
  return collectors
}

/** The endpoint without anything but scheme, host and port (a URL may carry a user and password). */
const originOf = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return "(not a URL)"
  }
}

/** Probes every collector in use: whether each takes a connection now. */
export const collectorStates = (
  settings: TelemetrySettings,
  probe: (url: string) => Promise<string | undefined>
): Effect.Effect<ReadonlyArray<CollectorState>> =>
  Effect.forEach(
    collectorsOf(settings).keys(),
    (url) => Effect.map(Effect.promise(() => probe(url)), (problem) => ({ endpoint: originOf(url), reachable: problem === undefined })),
    { concurrency: "unbounded" }
  )

/** Probes every collector in use once, and says which take no connection. */
export const checkCollectors = (
  settings: TelemetrySettings,
  probe: (url: string) => Promise<string | undefined>,
  log: JsonLog
): Effect.Effect<void> =>
  Effect.forEach(
    collectorsOf(settings),
    ([url, { sends, hints }]) =>
      Effect.flatMap(Effect.promise(() => probe(url)), (problem) =>
        Effect.sync(() => {
          const endpoint = originOf(url)
          if (problem === undefined) return log.log("debug", "telemetry collector answers", { endpoint })
          log.log("warn", "telemetry collector unreachable", {
            endpoint,
            sends,
            reason: problem,
            hint: `nothing is exported until a collector answers at ${endpoint}: ${hints.join("; ")}`
          })
        })),
    { concurrency: "unbounded", discard: true }
  )
