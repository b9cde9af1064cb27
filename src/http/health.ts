/**
 * `/healthz` (the process is up) and `/readyz` (configuration loaded,
 * dependencies reachable, and which configuration: its `config_version`).
 */
import { Effect } from "effect"
import type { ConfigVersion } from "../config/index.ts"
import { jsonReply } from "../pipeline/index.ts"
import type { RouteDef } from "./router.ts"

export interface ReadinessCheck {
  readonly name: string
  readonly check: Effect.Effect<boolean>
}

export const healthRoutes = (checks: ReadonlyArray<ReadinessCheck>, version: ConfigVersion): ReadonlyArray<RouteDef<never>> => [
  { method: "GET", path: "/healthz", handler: (ctx) => Effect.sync(() => jsonReply(ctx, 200, { status: "ok" })) },
  {
    method: "GET",
    path: "/readyz",
    handler: (ctx) =>
      Effect.map(
        Effect.forEach(checks, ({ name, check }) => Effect.map(check, (ok) => [name, ok] as const)),
        (results) => {
          const ready = results.every(([, ok]) => ok)
          return jsonReply(ctx, ready ? 200 : 503, {
            status: ready ? "ready" : "not_ready",
            checks: Object.fromEntries(results.map(([name, ok]) => [name, ok ? "ok" : "failing"])),
            config_version: version
          })
        }
      )
  }
]
