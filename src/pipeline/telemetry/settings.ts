/**
 * The telemetry stage's settings and the contracts between its parts: which
 * sections are on, the credential a GenAI export goes out with, and the sinks
 * the providers write to. Types only (and one pure function): the server
 * imports this whatever is enabled, so nothing here loads gRPC.
 */
import type { Redacted } from "effect"
import type { ConfigFile } from "../../config/index.ts"
import type { SendExport } from "../../otlp/queue.ts"

export interface TelemetrySettings {
  readonly telemetry: ConfigFile["telemetry"]
  readonly genai: ConfigFile["genai_telemetry"]
}

/** How long an ended span waits at most for its batch to be exported, unless `[telemetry] export_delay_ms` says otherwise. */
export const EXPORT_DELAY_MS = 1000

/** The delay of both sections' span queues. */
export const exportDelayOf = (settings: TelemetrySettings): number => settings.telemetry.export_delay_ms ?? EXPORT_DELAY_MS

/** The telemetry sections of a validated configuration. */
export const telemetrySettingsOf = (file: ConfigFile): TelemetrySettings => ({ telemetry: file.telemetry, genai: file.genai_telemetry })

/**
 * The credential a request's GenAI telemetry is exported with (the platform
 * token from the auth exchange). `fingerprint` names it in maps and memory
 * without holding the token as a key; `expiresAt` (epoch ms) lets its
 * exporter be flushed and closed while the token is still valid.
 */
export interface ExportCredential {
  readonly token: Redacted.Redacted<string>
  readonly fingerprint: string
  readonly expiresAt?: number | undefined
}

export type { SendExport }

/** Where the encoded exports go: OTLP gRPC collectors (sinks.ts), or memory (memory.ts). */
export interface TelemetrySinks {
  /** The application trace's span exports. */
  readonly appTraces: SendExport
  /** A credential's GenAI exports of `signal` (`undefined`: the configured `otlp_bearer_token`). */
  readonly genAi: (credential: ExportCredential | undefined, signal: "traces" | "metrics") => SendExport
  /** Every span handed over the moment it ends, as its own export (the test sinks). */
  readonly immediate: boolean
  /**
   * The test sinks read GenAI metrics when asked instead of on a timer: each
   * pipeline registers how to collect its metrics (an export request, or
   * undefined when empty). Returns the unregistration.
   */
  readonly collectOnDemand?: ((credential: ExportCredential | undefined, collect: () => Buffer | undefined) => () => void) | undefined
  /**
   * Whether the collector at `url` takes a connection: undefined when it
   * does, else why not (the live sinks; the test sinks have no collector).
   */
  readonly probe?: ((url: string) => Promise<string | undefined>) | undefined
  /** Closes the collectors' connections. */
  readonly close: () => void
}
