/**
 * Assembles the gateway's routes from its services, once at start. Handlers
 * capture the services they need here, so a request does no service lookups.
 */
import { Effect } from "effect"
import { GatewayConfig } from "../config/index.ts"
import { Log, makeChatProgram, makeProxyProgram } from "../pipeline/index.ts"
import { ProviderClient } from "../providers/transport.ts"
import { buildCatalog } from "../routing/catalog.ts"
import { compileProvider } from "../providers/adapter.ts"
import { compileRoutingTable } from "../routing/table.ts"
import { chatRoutes } from "./chat.ts"
import { jsonEndpointRoutes } from "./endpoints.ts"
import { fileRoutes } from "./files.ts"
import { healthRoutes } from "./health.ts"
import { modelRoutes } from "./models.ts"
import { passthroughRoutes } from "./passthrough.ts"
import { Router } from "./router.ts"
import { transcriptionRoutes } from "./transcriptions.ts"

export const makeRouter = Effect.gen(function*() {
  const settings = yield* GatewayConfig
  const client = yield* ProviderClient
  const log = yield* Log
  const table = compileRoutingTable(settings, compileProvider)
  const catalog = buildCatalog(settings)
  const maxBodyBytes = settings.file.server.max_body_bytes
  const runChat = makeChatProgram({ table, client, log })
  const runProxy = makeProxyProgram({ table, client, log })
  return new Router<never>([
    ...healthRoutes([{ name: "config", check: Effect.succeed(true) }]),
    ...modelRoutes(catalog),
    ...chatRoutes(runChat, maxBodyBytes),
    ...jsonEndpointRoutes(runProxy, maxBodyBytes),
    ...transcriptionRoutes(runProxy, settings.file.server.max_upload_bytes),
    ...fileRoutes({ settings, table, client }),
    ...passthroughRoutes({ settings, table, client })
  ])
})
