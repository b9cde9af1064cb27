/**
 * `GET /status`: what this gateway runs, as JSON, for its operators: the
 * configuration's version (hash and load time), the providers with their
 * models and credential state, routes and functions, the stages that are on,
 * whether Redis and the collectors answer, the tenant snapshots loaded with
 * their versions, and the worker count.
 *
 * Details
 * - Admin only. With `[server] admin_key` set, every caller sends it
 *   (`Authorization: Bearer …` or `x-gw-authorization: Bearer …`; 401 without
 *   one, 403 with another, compared by SHA-256 in constant time); without it,
 *   only loopback callers are answered (403 otherwise). A request run in
 *   memory (the library) has no network caller and is answered.
 * - A credential's state is `found`, `missing` (its variable is unset) or
 *   `caller` (the caller brings the key); never a value.
 */
import { Effect } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { workerCountOf } from "../config/index.ts"
import type { ConfigVersion, GatewaySettings, ResolvedCredential } from "../config/index.ts"
import { GatewayError } from "../domain/index.ts"
import { header, jsonReply } from "../pipeline/index.ts"
import type { ResponseCache, TelemetryShape } from "../pipeline/index.ts"
import type { TenantStore } from "../tenancy/TenantStore.ts"
import type { HttpRequestContext } from "./context.ts"
import type { RouteDef } from "./router.ts"

export interface StatusSources {
  readonly settings: GatewaySettings
  readonly version: ConfigVersion
  readonly cache: ResponseCache["Service"]
  readonly store: TenantStore["Service"]
  readonly telemetry: TelemetryShape
}

const credentialState = (credential: ResolvedCredential): "found" | "missing" | "caller" =>
  credential.location.kind === "none" ? "caller" : credential.value === undefined ? "missing" : "found"

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/

const bearerOf = (ctx: HttpRequestContext): string | undefined => {
  const value = header(ctx, "x-gw-authorization") ?? header(ctx, "authorization")
  const match = value === undefined ? null : /^Bearer\s+(.+)$/i.exec(value.trim())
  return match === null ? undefined : match[1]
}

/** Whether the caller may read `/status`: the refusal, or undefined. */
export const statusRefusal = (ctx: HttpRequestContext, settings: GatewaySettings): GatewayError | undefined => {
  const expected = settings.adminKey?.fingerprint
  if (expected === undefined) {
    const address = ctx.req.socket?.remoteAddress
    return address === undefined || LOOPBACK.test(address)
      ? undefined
      : new GatewayError({ status: 403, code: "forbidden", message: "/status answers loopback callers only while [server] admin_key is not set" })
  }
  const given = bearerOf(ctx)
  if (given === undefined) return new GatewayError({ status: 401, code: "auth", message: "/status needs the admin key: Authorization: Bearer <admin key>" })
  const digest = createHash("sha256").update(given).digest()
  return timingSafeEqual(digest, Buffer.from(expected, "hex"))
    ? undefined
    : new GatewayError({ status: 403, code: "forbidden", message: "the admin key is not valid" })
}

/** `up` or `down`, for a readiness check. */
const reachability = (check: Effect.Effect<boolean>) => Effect.map(check, (ok) => (ok ? "reachable" : "unreachable"))

const statusBody = ({ settings, version, cache, store, telemetry }: StatusSources) =>
  Effect.map(
    Effect.all({
      cache_redis: settings.file.cache.enabled ? reachability(cache.ready(settings.file.cache)) : Effect.succeed(undefined),
      tenant_redis: settings.file.tenant_routing.enabled ? reachability(store.ready) : Effect.succeed(undefined),
      collectors: telemetry.collectors
    }, { concurrency: "unbounded" }),
    (dependencies) => {
      const { file } = settings
      return {
        config_version: version,
        source: settings.source,
        workers: workerCountOf(file),
        providers: [...settings.providers.values()].map((provider) => ({
          id: provider.id,
          kind: provider.kind,
          models: provider.models,
          credential: credentialState(provider.credential)
        })),
        routes: Object.entries(file.routes).map(([name, route]) => ({ name, endpoint: route.endpoint, strategy: route.strategy, models: route.models })),
        functions: Object.entries(file.functions).map(([name, fn]) => ({ name, endpoint: fn.endpoint, strategy: fn.strategy })),
        stages: {
          guardrails: file.security.enabled,
          output_guardrails: file.security.enabled && file.security.output_guardrails,
          cache: file.cache.enabled,
          telemetry: file.telemetry.enabled,
          genai_telemetry: file.genai_telemetry.enabled,
          auth: file.auth.enabled,
          tenant_routing: file.tenant_routing.enabled,
          metrics: file.metrics.enabled
        },
        dependencies,
        tenants: store.loaded()
      }
    }
  )

export const statusRoutes = (sources: StatusSources): ReadonlyArray<RouteDef<never>> => [
  {
    method: "GET",
    path: "/status",
    handler: (ctx) => {
      const refused = statusRefusal(ctx, sources.settings)
      if (refused !== undefined) return Effect.fail(refused)
      return Effect.map(statusBody(sources), (body) => jsonReply(ctx, 200, body, { "cache-control": "no-store" }))
    }
  }
]
