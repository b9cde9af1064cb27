/**
 * The running gateway as one scoped Effect: picks the live layers, builds the
 * router and listens until the scope closes. `main.ts` runs it for `serve`;
 * end-to-end tests run it on port 0 with their own configuration.
 */
import { Context, Effect, Layer } from "effect"
import type { Scope } from "effect"
import type * as Http from "node:http"
import { GatewayConfig } from "./config/index.ts"
import type { GatewaySettings } from "./config/index.ts"
import { listen, makeRequestListener, makeRouter } from "./http/index.ts"
import type { InFlight } from "./http/index.ts"
import type { ListenError } from "./http/server.ts"
import { JsonLog, Log } from "./pipeline/telemetry/log.ts"
import { ProviderClient } from "./providers/transport.ts"

/** Live layers for a validated configuration. */
export const liveLayer = (settings: GatewaySettings, log = new JsonLog(settings.file.telemetry.log_level)) =>
  Layer.mergeAll(Layer.succeed(GatewayConfig, settings), Layer.succeed(Log, log), ProviderClient.layer)

export const serveGateway: Effect.Effect<Http.Server, ListenError, GatewayConfig | Log | ProviderClient | Scope.Scope> = Effect.gen(function*() {
  const settings = yield* GatewayConfig
  const log = yield* Log
  for (const warning of settings.warnings) log.log("warn", "config warning", { source: settings.source, warning })
  const router = yield* makeRouter
  const inFlight: InFlight = { count: 0, idle: [] }
  const listener = makeRequestListener(router, Context.empty(), log, inFlight)
  return yield* listen(
    { host: settings.file.server.host, port: settings.file.server.port, graceMs: settings.file.server.shutdown_grace_secs * 1000 },
    listener,
    inFlight,
    log
  )
})
