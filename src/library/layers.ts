/**
 * Building the library's `Gateway` from a configuration: a TOML text, a TOML
 * file or a configuration object (the parsed TOML shape), validated exactly
 * like the server's file, with the live layers of every stage and any of them
 * replaced (`overrides`).
 *
 * The layer owns what the stages open (connection pools, Redis clients,
 * telemetry exporters): closing its scope closes them.
 */
import { Effect, Layer } from "effect"
import { parse, TomlError } from "smol-toml"
import { ConfigError, GatewayConfig, settingsFromDocument } from "../config/index.ts"
import type { GatewaySettings } from "../config/index.ts"
import { liveLayer } from "../gateway.ts"
import type { LayerOverrides } from "../gateway.ts"
import { StartError } from "../http/server.ts"
import { Guardrail, JsonLog, Metrics } from "../pipeline/index.ts"
import type { LogLevel } from "../pipeline/index.ts"
import { TenantStore } from "../tenancy/TenantStore.ts"
import { Gateway } from "./Gateway.ts"

/** Where the configuration comes from. */
export type GatewaySource =
  | { readonly toml: string }
  | { readonly file: string }
  | { readonly config: Readonly<Record<string, unknown>> }

type Env = Readonly<Record<string, string | undefined>>

export interface GatewayOptions extends LayerOverrides {
  /** Environment variables for credentials and overrides (default `process.env`). */
  readonly env?: Env | undefined
  /**
   * Where log lines go: the gateway's own JSON lines. Default: stderr, at
   * `warn` (a library call writes no request line unless asked).
   */
  readonly log?: { readonly level?: LogLevel; readonly write?: (text: string) => void } | undefined
}

/** Reads and validates the configuration; fails with the `check-config` message. */
export const loadGatewaySettings = (source: GatewaySource, env: Env = process.env): Effect.Effect<GatewaySettings, ConfigError> =>
  "file" in source ? GatewayConfig.load(source.file, env) : Effect.suspend(() => {
    let document: unknown
    if ("toml" in source) {
      try {
        document = parse(source.toml)
      } catch (error) {
        return Effect.fail(new ConfigError({ message: `<toml>: ${error instanceof TomlError ? error.message : String(error)}` }))
      }
    } else {
      document = source.config
    }
    // A library gateway listens nowhere: `[server]` may be left out.
    if (typeof document === "object" && document !== null && !Array.isArray(document) && !("server" in document)) document = { ...document, server: {} }
    return Effect.fromResult(settingsFromDocument(document, env, "toml" in source ? "<toml>" : "<config>"))
  })

/**
 * The `Gateway` for a configuration, with every stage live unless replaced
 * in `options`.
 */
export const gatewayLayer = (source: GatewaySource, options: GatewayOptions = {}): Layer.Layer<Gateway | GatewayConfig, ConfigError | StartError> =>
  Layer.unwrap(Effect.map(loadGatewaySettings(source, options.env ?? process.env), (settings) => {
    const write = options.log?.write ?? ((text: string) => void process.stderr.write(text))
    const log = new JsonLog(options.log?.level ?? "warn", { write })
    const services = liveLayer(settings, log, { metrics: Metrics.layerOff, ...options })
    return Layer.merge(Gateway.layer.pipe(Layer.provide(services)), Layer.succeed(GatewayConfig, settings))
  }))

/**
 * Multi-tenant projects from a map of snapshots (`{ [projectId]: { [env]:
 * snapshot } }`, each the JSON document `gateway snapshot publish` takes), for
 * `options.tenants`: requests then pick their project with `x-gw-project-id`.
 */
export const tenantsFromSnapshots = (snapshots: Readonly<Record<string, Readonly<Record<string, unknown>>>>): Layer.Layer<TenantStore, never, Guardrail> =>
  Layer.unwrap(Effect.map(Effect.service(Guardrail), (guardrail) => TenantStore.layerSnapshots(snapshots, { guard: guardrail.compile })))

