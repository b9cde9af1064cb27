/**
 * Assembles the gateway's routes from its services, once at start. Handlers
 * capture the services they need here, so a request does no service lookups.
 */
import { Effect } from "effect"
import { GatewayConfig } from "../config/index.ts"
import { buildCatalog } from "../routing/catalog.ts"
import { healthRoutes } from "./health.ts"
import { modelRoutes } from "./models.ts"
import { Router } from "./router.ts"

export const makeRouter = Effect.gen(function*() {
  const settings = yield* GatewayConfig
  const catalog = buildCatalog(settings)
  return new Router<never>([
    ...healthRoutes([{ name: "config", check: Effect.succeed(true) }]),
    ...modelRoutes(catalog)
  ])
})
