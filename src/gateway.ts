/**
 * The running gateway as one scoped Effect: picks the live layers, builds the
 * router and listens until the scope closes. `main.ts` runs it for `serve`;
 * end-to-end tests run it on port 0 with their own configuration.
 */
import { Cause, Context, Effect, Exit, Layer, Result, Scope } from "effect"
import { watch } from "node:fs"
import type { FSWatcher } from "node:fs"
import type * as Http from "node:http"
import { basename, dirname } from "node:path"
import { applicableReload, configVersionOf, GatewayConfig } from "./config/index.ts"
import type { ConfigError, GatewaySettings } from "./config/index.ts"
import { listen, listenMetrics, makeInFlight, makeRequestListener, makeRouter, openStreams, whenSettled } from "./http/index.ts"
import type { InFlight } from "./http/index.ts"
import { StartError } from "./http/server.ts"
import { JsonLog, Log } from "./infra/log.ts"
import { Guardrail, hasLimits, Limits, Metrics, ResponseCache, ResponseStore, Telemetry, telemetrySettingsOf } from "./pipeline/index.ts"
import { ProviderClient } from "./providers/transport.ts"
import { PlatformAuth } from "./tenancy/auth-exchange.ts"
import { compileProject, STATIC_IDENTITY } from "./tenancy/project.ts"
import { TenantStore } from "./tenancy/TenantStore.ts"
import { servingSummary } from "./startup-summary.ts"
import { isClusterWorker } from "./workers.ts"

/** The services the running gateway needs. */
export type GatewayServices = GatewayConfig | Log | ProviderClient | TenantStore | Guardrail | ResponseCache | ResponseStore | Telemetry | PlatformAuth | Limits | Metrics

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
  /** The Responses API's store (`[responses]`). */
  readonly responses?: Layer.Layer<ResponseStore, never, Log> | undefined
  readonly telemetry?: Layer.Layer<Telemetry, never, Log> | undefined
  readonly auth?: Layer.Layer<PlatformAuth, never, Log> | undefined
  readonly limits?: Layer.Layer<Limits, never, Log> | undefined
  /** Where projects come from; the stages' compilers (Guardrail) and the log are provided. */
  readonly tenants?: Layer.Layer<TenantStore, StartError, Guardrail | Log> | undefined
  /** The metrics stage; the library's gateway, which listens nowhere, has it off. */
  readonly metrics?: Layer.Layer<Metrics> | undefined
}

/** The services a configuration determines: a reload builds them again. */
export type ConfiguredServices = GatewayConfig | TenantStore | Guardrail | ResponseCache | ResponseStore | Telemetry | PlatformAuth | Limits

/** The services that outlive a reload: the log, the upstream connection pools, the metrics. */
export type KeptServices = Log | ProviderClient | Metrics

/** The layers that outlive a reload, with the log given and any layer replaced by `overrides`. */
export const keptLayer = (settings: GatewaySettings, log: JsonLog, overrides?: LayerOverrides): Layer.Layer<KeptServices> =>
  Layer.mergeAll(
    Layer.succeed(Log, log),
    overrides?.client ?? ProviderClient.layer,
    overrides?.metrics ?? (settings.file.metrics.enabled ? Metrics.layer({ clusterWorker: isClusterWorker() }) : Metrics.layerOff)
  )

/** The layers a configuration determines (live ones, or `overrides`), on the given log. */
export const configuredLayer = (settings: GatewaySettings, log: JsonLog, overrides?: LayerOverrides): Layer.Layer<ConfiguredServices, StartError> => {
  const logLayer = Layer.succeed(Log, log)
  const guardrail = overrides?.guardrail ?? Guardrail.layer
  return Layer.mergeAll(
    Layer.succeed(GatewayConfig, settings),
    guardrail,
    (overrides?.cache ?? (settings.file.cache.enabled || settings.file.tenant_routing.enabled ? ResponseCache.layer : ResponseCache.layerOff)).pipe(Layer.provide(logLayer)),
    (overrides?.responses ?? (settings.file.responses.enabled ? ResponseStore.layer : ResponseStore.layerOff)).pipe(Layer.provide(logLayer)),
    (overrides?.telemetry ?? Telemetry.layer(telemetrySettingsOf(settings.file))).pipe(Layer.provide(logLayer)),
    (overrides?.auth ?? PlatformAuth.layer(settings.file.auth)).pipe(Layer.provide(logLayer)),
    (overrides?.limits ?? limitsLayer(settings)).pipe(Layer.provide(logLayer)),
    (overrides?.tenants ?? projects(settings)).pipe(Layer.provide([guardrail, logLayer]))
  )
}

/**
 * The gateway's layers for a validated configuration: live ones, with the log
 * given (tests capture it) and any layer replaced by `overrides`.
 */
export const liveLayer = (
  settings: GatewaySettings,
  log = new JsonLog(settings.file.telemetry.log_level),
  overrides?: LayerOverrides
): Layer.Layer<GatewayServices, StartError> => Layer.merge(keptLayer(settings, log, overrides), configuredLayer(settings, log, overrides))

/** Requests of one configuration: its settings, its listener, and the scope of its stages (undefined: the caller's). */
interface Generation {
  readonly settings: GatewaySettings
  readonly listener: Http.RequestListener
  readonly scope: Scope.Closeable | undefined
}

/** The listener of the configuration in context: its router, its telemetry, the kept metrics. */
const generationListener = (inFlight: InFlight) =>
  Effect.gen(function*() {
    const settings = yield* GatewayConfig
    const router = yield* makeRouter
    const telemetry = yield* Telemetry
    const { server } = settings.file
    return makeRequestListener(router, telemetry.requestContext, yield* Log, inFlight, {
      bodyIdleMs: server.body_idle_timeout_secs * 1000,
      bodyMinBytesPerSec: server.body_min_bytes_per_sec,
      tracing: telemetry,
      metrics: (yield* Metrics).record
    })
  })

/** What stopped a configuration's stages from starting, in a line. */
const startFailure = (cause: Cause.Cause<StartError>): string => {
  const error = Cause.squash(cause)
  return error instanceof StartError ? error.message : Cause.pretty(cause)
}

/** How a serving gateway reads its configuration again (SIGHUP, `[server] watch_config`). */
export interface Reloading {
  /** The file as `serve` reads it (its command-line flags applied), or the message `check-config` prints. */
  readonly load: () => Result.Result<GatewaySettings, ConfigError>
}

const serveWith = (reloading: Reloading | undefined, stages: Scope.Closeable | undefined): Effect.Effect<Http.Server, StartError, GatewayServices | Scope.Scope> =>
  Effect.gen(function*() {
    const settings = yield* GatewayConfig
    const log = yield* Log
    const metrics = yield* Metrics
    for (const warning of settings.warnings) log.log("warn", "config warning", { source: settings.source, warning })
    const { server } = settings.file
    const inFlight = makeInFlight()
    metrics.watchOpenStreams(() => openStreams(inFlight))
    let current: Generation = { settings, listener: yield* generationListener(inFlight), scope: stages }
    // A configuration a reload built is closed with the gateway (after the drain: finalizers run in reverse).
    yield* Effect.addFinalizer(() => current.scope === undefined ? Effect.void : Scope.close(current.scope, Exit.void))
    const metricsPort = settings.file.metrics.port
    if (settings.file.metrics.enabled && metricsPort !== undefined) yield* listenMetrics(settings.file.metrics.host, metricsPort, metrics, log)
    const listening = yield* listen(
      {
        host: server.host,
        port: server.port,
        graceMs: server.shutdown_grace_secs * 1000,
        maxConnections: server.max_connections,
        headerTimeoutMs: server.header_timeout_secs * 1000,
        clientIdleMs: server.client_idle_timeout_secs * 1000
      },
      (req, res) => current.listener(req, res),
      inFlight,
      log
    )
    // In workers mode the primary says it once for all of them.
    if (!isClusterWorker()) log.log("info", "serving", servingSummary(settings))
    if (reloading === undefined) return listening

    const kept = yield* Effect.context<KeptServices>()
    /** Builds the new configuration's stages and listener, then sends new requests to it; in-flight ones finish on the old. */
    const reload = Effect.gen(function*() {
      const loaded = reloading.load()
      const running = configVersionOf(current.settings, new Date())
      if (Result.isFailure(loaded)) {
        log.log("error", "config reload refused", { source: current.settings.source, error: loaded.failure.message, config_version: running.hash })
        return
      }
      const { settings: next, restartNeeded } = applicableReload(current.settings, loaded.success)
      const scope = yield* Scope.make()
      const built = yield* Effect.exit(Layer.buildWithScope(configuredLayer(next, log), scope))
      if (Exit.isFailure(built)) {
        yield* Scope.close(scope, built)
        log.log("error", "config reload refused", { source: next.source, error: startFailure(built.cause), config_version: running.hash })
        return
      }
      const listener = yield* generationListener(inFlight).pipe(Effect.provideContext(Context.merge(kept, built.value)))
      const previous = current
      current = { settings: next, listener, scope }
      for (const warning of next.warnings) log.log("warn", "config warning", { source: next.source, warning })
      log.log("info", "config reloaded", {
        source: next.source,
        config_version: configVersionOf(next, new Date()).hash,
        ...(restartNeeded.length > 0 ? { restart_needed: restartNeeded } : {})
      })
      const retired = previous.scope
      if (retired !== undefined) whenSettled(inFlight, () => Effect.runFork(Scope.close(retired, Exit.void)))
    })
    yield* reloadTriggers(settings, () => Effect.runPromise(reload))
    return listening
  })

/**
 * Runs `reload` on SIGHUP and, with `[server] watch_config`, when the file
 * changes (replaced or written in place; a burst of writes is one reload).
 * Reloads never overlap; a trigger during one runs one more after it.
 */
const reloadTriggers = (settings: GatewaySettings, reload: () => Promise<void>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      let chain = Promise.resolve()
      let queued = false
      const trigger = () => {
        if (queued) return
        queued = true
        chain = chain.then(() => {
          queued = false
          return reload()
        })
      }
      process.on("SIGHUP", trigger)
      let watcher: FSWatcher | undefined
      let settle: ReturnType<typeof setTimeout> | undefined
      if (settings.file.server.watch_config) {
        const file = basename(settings.source)
        watcher = watch(dirname(settings.source), (_event, name) => {
          if (name !== file) return
          clearTimeout(settle)
          settle = setTimeout(trigger, WATCH_SETTLE_MS)
        })
      }
      return () => {
        process.off("SIGHUP", trigger)
        clearTimeout(settle)
        watcher?.close()
      }
    }),
    (stop) => Effect.sync(stop)
  )

/** A file written in several steps is read once this long after its last change. */
const WATCH_SETTLE_MS = 100

export const serveGateway: Effect.Effect<Http.Server, StartError, GatewayServices | Scope.Scope> = serveWith(undefined, undefined)

/**
 * What `serve` runs: `serveGateway` on the configuration `settings`, whose
 * stages it builds itself (a reload closes them once their requests are
 * done), and that reloads (SIGHUP, `[server] watch_config`).
 */
export const serveReloading = (settings: GatewaySettings, reloading: Reloading): Effect.Effect<Http.Server, StartError, KeptServices | Scope.Scope> =>
  Effect.gen(function*() {
    const outer = yield* Effect.context<KeptServices | Scope.Scope>()
    // Forked before the listener is acquired: at shutdown it closes after the drain.
    const stages = yield* Scope.fork(Context.get(outer, Scope.Scope))
    const built = yield* Layer.buildWithScope(configuredLayer(settings, Context.get(outer, Log)), stages)
    return yield* serveWith(reloading, stages).pipe(Effect.provideContext(Context.merge(outer, built)))
  })
