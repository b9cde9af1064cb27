/**
 * What a configuration reload (SIGHUP, `[server] watch_config`) may change
 * while the gateway runs, and the version a loaded configuration is known by
 * (`/readyz`, `/status`, the reload's log line).
 *
 * Details
 * - Settings the running process is built on (the listening address, the
 *   workers, the connection limits, the log's level and format, the metrics
 *   listener, the watch itself) keep their running values; a reload names the
 *   ones the file changed, which take effect on restart.
 * - The version's hash covers the validated file and the fingerprints of the
 *   credentials it resolved (a key changed in the environment is a new
 *   version), never a key itself.
 */
import { createHash } from "node:crypto"
import type { GatewaySettings } from "./resolved.ts"

export interface ConfigVersion {
  /** The first 16 hex digits of a SHA-256 of the validated configuration. */
  readonly hash: string
  /** When it was loaded, ISO 8601. */
  readonly loaded_at: string
}

export const configVersionOf = (settings: GatewaySettings, loadedAt: Date): ConfigVersion => {
  const digest = createHash("sha256").update(JSON.stringify(settings.file))
  for (const provider of settings.providers.values()) digest.update(`\0${provider.id}\0${provider.credential.fingerprint ?? ""}`)
  for (const target of settings.targets.values()) digest.update(`\0${target.id}\0${target.credential?.fingerprint ?? ""}`)
  return { hash: digest.digest("hex").slice(0, 16), loaded_at: loadedAt.toISOString() }
}

/** The settings only a restart applies, by section. */
const RESTART_ONLY = {
  server: ["host", "port", "workers", "max_connections", "header_timeout_secs", "client_idle_timeout_secs", "shutdown_grace_secs", "watch_config"],
  telemetry: ["log_level", "log_format"],
  metrics: ["enabled", "host", "port"]
} as const

type Section = keyof typeof RESTART_ONLY

/**
 * The configuration a reload applies: `next`, with the restart-only settings
 * of `running` kept, and the names (`server.port`) of those `next` changed.
 */
export const applicableReload = (running: GatewaySettings, next: GatewaySettings): { readonly settings: GatewaySettings; readonly restartNeeded: ReadonlyArray<string> } => {
  const restartNeeded: Array<string> = []
  const file: Record<string, unknown> = { ...next.file }
  for (const section of Object.keys(RESTART_ONLY) as Array<Section>) {
    const kept: Record<string, unknown> = { ...next.file[section] }
    const old: Record<string, unknown> = running.file[section]
    for (const key of RESTART_ONLY[section]) {
      if (old[key] === kept[key]) continue
      restartNeeded.push(`${section}.${key}`)
      if (old[key] === undefined) delete kept[key]
      else kept[key] = old[key]
    }
    file[section] = kept
  }
  return { settings: { ...next, file: file as unknown as GatewaySettings["file"] }, restartNeeded }
}
