/**
 * Assembles the gateway's routes from its services, once at start. Handlers
 * capture the services they need here, so a request does no service lookups.
 */
import { Effect } from "effect"
import { configVersionOf, GatewayConfig, responsesSectionOf } from "../config/index.ts"
import type { GatewaySettings } from "../config/index.ts"
import { Limits, Log, makeChatProgram, makeProxyProgram, Metrics, ResponseCache, ResponseStore, Telemetry } from "../pipeline/index.ts"
import type { DependencyCheck } from "../pipeline/index.ts"
import { admittedProject, makeAdmit } from "./admission.ts"
import { ProviderClient } from "../providers/transport.ts"
import { PlatformAuth } from "../tenancy/auth-exchange.ts"
import { TenantStore } from "../tenancy/TenantStore.ts"
import { chatRoutes } from "./chat.ts"
import { responsesRoutes } from "./responses.ts"
import { jsonEndpointRoutes } from "./endpoints.ts"
import { fileRoutes } from "./files.ts"
import { healthRoutes } from "./health.ts"
import { metricsRoutes } from "./metrics.ts"
import { statusRoutes } from "./status.ts"
import { modelRoutes } from "./models.ts"
import { passthroughRoutes } from "./passthrough.ts"
import { makeProjectResolver, modellessProject } from "./project.ts"
import { makeKeyGate } from "../tenancy/gateway-keys.ts"
import { Router } from "./router.ts"
import { transcriptionRoutes } from "./transcriptions.ts"

/** The dependencies `/metrics` reports up or down: the Redis of the cache and of the tenant store, the collectors. */
const dependencyChecks = (
  settings: GatewaySettings,
  cache: ResponseCache["Service"],
  store: TenantStore["Service"],
  telemetry: Telemetry["Service"]
): ReadonlyArray<DependencyCheck> => [
  ...(settings.file.cache.enabled ? [{ name: "cache_redis", up: () => Effect.runPromise(cache.ready(settings.file.cache)) }] : []),
  ...(settings.file.tenant_routing.enabled ? [{ name: store.readinessName, up: () => Effect.runPromise(store.ready) }] : []),
  ...(telemetry.tracing || telemetry.genAi.enabled
    ? [{ name: "collector", up: () => Effect.runPromise(Effect.map(telemetry.collectors, (all) => all.every((collector) => collector.reachable))) }]
    : [])
]

export const makeRouter = Effect.gen(function*() {
  const settings = yield* GatewayConfig
  const client = yield* ProviderClient
  const log = yield* Log
  const store = yield* TenantStore
  const project = makeProjectResolver(store, yield* PlatformAuth, settings.file.auth.project_id, makeKeyGate(settings.keys))
  const { server } = settings.file
  const cache = yield* ResponseCache
  const telemetry = yield* Telemetry
  const runChat = makeChatProgram({ client, log, cache, telemetry })
  const runProxy = makeProxyProgram({ client, log, cache, telemetry })
  const metrics = yield* Metrics
  const { metrics: metricsSection } = settings.file
  metrics.watchDependencies(dependencyChecks(settings, cache, store, telemetry))
  const version = configVersionOf(settings, new Date())
  const admit = makeAdmit(yield* Limits, settings.file.limits.default_output_tokens)
  const responseStore = yield* ResponseStore
  const state = responseStore.enabled ? { store: responseStore, section: responsesSectionOf(settings.file) } : undefined
  return new Router<never>([
    ...healthRoutes([{ name: "config", check: Effect.succeed(true) }, { name: store.readinessName, check: store.ready }], version),
    ...statusRoutes({ settings, version, cache, store, telemetry }),
    ...(metricsSection.enabled && metricsSection.port === undefined ? metricsRoutes(metrics) : []),
    ...modelRoutes(project),
    ...chatRoutes(project, runChat, server.max_body_bytes, admit, state),
    ...(state === undefined ? [] : responsesRoutes(project, state, client)),
    ...jsonEndpointRoutes(project, runProxy, server.max_body_bytes, admit),
    ...transcriptionRoutes(admittedProject(project, admit, "audio_transcription"), runProxy, server.max_upload_bytes),
    ...fileRoutes({ project: admittedProject(modellessProject(project), admit, "chat"), server, client }),
    ...passthroughRoutes({ project: admittedProject(modellessProject(project), admit, "chat"), server, client })
  ])
})
