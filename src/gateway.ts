/**
 * The running gateway as one scoped Effect: picks the live layers, builds the
 * router and listens until the scope closes. `main.ts` runs it for `serve`;
 * end-to-end tests run it on port 0 with their own configuration.
 */
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import type * as Http from "node:http"
import { GatewayConfig } from "./config/index.ts"
import type { GatewaySettings } from "./config/index.ts"
import { listen, makeInFlight, makeRequestListener, makeRouter } from "./http/index.ts"
import { StartError } from "./http/server.ts"
import { JsonLog, Log } from "./infra/log.ts"
import { Guardrail, hasLimits, Limits, ResponseCache, Telemetry, telemetrySettingsOf } from "./pipeline/index.ts"
import { ProviderClient } from "./providers/transport.ts"
import { PlatformAuth } from "./tenancy/auth-exchange.ts"
import { compileProject, STATIC_IDENTITY } from "./tenancy/project.ts"
import { TenantStore } from "./tenancy/TenantStore.ts"
import { servingSummary } from "./startup-summary.ts"
import { isClusterWorker } from "./workers.ts"

/** The services the running gateway needs. */
export type GatewayServices = GatewayConfig | Log | ProviderClient | TenantStore | Guardrail | ResponseCache | Telemetry | PlatformAuth | Limits

/** The limits stage: counted in Redis when some key or project may have a limit, else off (nothing loaded). */
const limitsLayer = (settings: GatewaySettings): Layer.Layer<Limits, never, Log> =>
  // A tenant snapshot may carry project limits: multi-tenant mode counts in the store whatever the keys say.
  settings.file.tenant_routing.enabled || settings.keys.some((key) => hasLimits(key.limits)) ? Limits.layer(settings.file) : Limits.layerOff

/**
 * Where projects come from, compiled with the stages' own compilers: the
 * configuration file's one project, or (`[tenant_routing]`) snapshots in Redis.
 */
const projects = (settings: GatewaySettings): Layer.Layer<TenantStore, StartError, Guardrail | Log> =>
  Layer.unwrap(Effect.gen(function*() {
    const guardrail = yield* Guardrail
    const stages = { guard: guardrail.compile }
    if (!settings.file.tenant_routing.enabled) return TenantStore.layerStatic(compileProject(settings, STATIC_IDENTITY, stages))
    return TenantStore.layer(settings, stages, (message) => new StartError({ message }))
  }))

/** Layers that replace the live ones (tests, the library's callers). */
export interface LayerOverrides {
  readonly client?: Layer.Layer<ProviderClient> | undefined
  readonly guardrail?: Layer.Layer<Guardrail> | undefined
  readonly cache?: Layer.Layer<ResponseCache, never, Log> | undefined
  readonly telemetry?: Layer.Layer<Telemetry, never, Log> | undefined
  readonly auth?: Layer.Layer<PlatformAuth, never, Log> | undefined
  readonly limits?: Layer.Layer<Limits, never, Log> | undefined
  /** Where projects come from; the stages' compilers (Guardrail) and the log are provided. */
  readonly tenants?: Layer.Layer<TenantStore, StartError, Guardrail | Log> | undefined
}

/**
 * The gateway's layers for a validated configuration: live ones, with the log
 * given (tests capture it) and any layer replaced by `overrides`.
 */
export const liveLayer = (
  settings: GatewaySettings,
  log = new JsonLog(settings.file.telemetry.log_level),
  overrides?: LayerOverrides
): Layer.Layer<GatewayServices, StartError> => {
  const logLayer = Layer.succeed(Log, log)
  const guardrail = overrides?.guardrail ?? Guardrail.layer
  return Layer.mergeAll(
    Layer.succeed(GatewayConfig, settings),
    logLayer,
    overrides?.client ?? ProviderClient.layer,
    guardrail,
    (overrides?.cache ?? (settings.file.cache.enabled || settings.file.tenant_routing.enabled ? ResponseCache.layer : ResponseCache.layerOff)).pipe(Layer.provide(logLayer)),
    (overrides?.telemetry ?? Telemetry.layer(telemetrySettingsOf(settings.file))).pipe(Layer.provide(logLayer)),
    (overrides?.auth ?? PlatformAuth.layer(settings.file.auth)).pipe(Layer.provide(logLayer)),
    (overrides?.limits ?? limitsLayer(settings)).pipe(Layer.provide(logLayer)),
    (overrides?.tenants ?? projects(settings)).pipe(Layer.provide([guardrail, logLayer]))
  )
}

export const serveGateway: Effect.Effect<Http.Server, StartError, GatewayServices | Scope.Scope> = Effect.gen(function*() {
  const settings = yield* GatewayConfig
  const log = yield* Log
  for (const warning of settings.warnings) log.log("warn", "config warning", { source: settings.source, warning })
  const router = yield* makeRouter
  const telemetry = yield* Telemetry
  const { server } = settings.file
  const inFlight = makeInFlight()
  const listener = makeRequestListener(router, telemetry.requestContext, log, inFlight, {
    bodyIdleMs: server.body_idle_timeout_secs * 1000,
    bodyMinBytesPerSec: server.body_min_bytes_per_sec,
    tracing: telemetry
  })
  const listening = yield* listen(
    {
      host: server.host,
      port: server.port,
      graceMs: server.shutdown_grace_secs * 1000,
      maxConnections: server.max_connections,
      headerTimeoutMs: server.header_timeout_secs * 1000,
      clientIdleMs: server.client_idle_timeout_secs * 1000
    },
    listener,
    inFlight,
    log
  )
  // In workers mode the primary says it once for all of them.
  if (!isClusterWorker()) log.log("info", "serving", servingSummary(settings))
  return listening
})
