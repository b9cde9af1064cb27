/**
 * The request's project, asked of the tenant store once per model request:
 * `x-gw-project-id` (or `[auth] project_id` standing in for it) and
 * `x-gw-environment`. In single-team mode the store answers with the
 * configuration file's project whatever the headers say.
 *
 * With `[auth]` on, the platform exchange comes first (docs/reference/gateway-spec.md §5): a request
 * without a good platform key is answered 401/403 (503 when the exchange is
 * down) before anything else, the project is the one the token was issued
 * for, and the token becomes the request's telemetry export credential.
 *
 * With gateway keys (`[keys]`), the key comes first instead: a request without
 * a known key is answered 401; the key's `project_id`, when it has one, is
 * the request's project; the key is noted on the context for the stages that
 * check what it may use and count what it spends.
 */
import { Effect, Result } from "effect"
import type { GatewayError, InfraError } from "../domain/index.ts"
import { header } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import type { PlatformAuthShape } from "../tenancy/auth-exchange.ts"
import { forbiddenFor } from "../tenancy/gateway-keys.ts"
import type { KeyGate } from "../tenancy/gateway-keys.ts"
import type { Project } from "../tenancy/project.ts"
import type { TenantStore } from "../tenancy/TenantStore.ts"

export type ProjectResolver = (ctx: HttpRequestContext) => Effect.Effect<Project, GatewayError | InfraError>

export const makeProjectResolver = (
  store: TenantStore["Service"],
  auth: PlatformAuthShape,
  defaultProjectId: string | undefined,
  keys: KeyGate
): ProjectResolver => {
  // Eager: a static configuration's project is already resolved (an Exit), and is mapped without a runtime step.
  const resolve = (ctx: HttpRequestContext, authenticated?: string) =>
    Effect.mapEager(store.resolve({
      projectId: header(ctx, "x-gw-project-id"),
      configuredProjectId: defaultProjectId,
      environment: header(ctx, "x-gw-environment"),
      authenticated
    }), (project) => {
      // Every answer of a project with a cache says whether it came from it (a hit overrides this).
      if (project.settings.file.cache.enabled) (ctx.replyHeaders ??= {})["x-gw-cache"] = "miss"
      return project
    })
  if (keys.enabled) {
    return (ctx) => {
      const key = keys.authenticate(ctx.req.headers)
      if (Result.isFailure(key)) return Effect.fail(key.failure)
      ctx.callerKey = key.success
      ctx.log.key = key.success.name
      return resolve(ctx, key.success.projectId)
    }
  }
  if (!auth.enabled) return (ctx) => resolve(ctx)
  return (ctx) =>
    Effect.flatMap(auth.authenticate(ctx.req.headers), (token) => {
      ctx.exportCredential = token
      return resolve(ctx, token?.projectId)
    })
}

/**
 * The project of a route that names no model (files, native passthrough): a
 * key limited to some models, routes or functions may not use it (403).
 */
export const modellessProject = (projectOf: ProjectResolver): ProjectResolver => (ctx) =>
  Effect.flatMap(projectOf(ctx), (project) => {
    const key = ctx.callerKey
    return key !== undefined && key.restricted ? Effect.fail(forbiddenFor(key, "files or native passthrough (they name no model)")) : Effect.succeed(project)
  })
