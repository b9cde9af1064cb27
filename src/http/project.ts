/**
 * The request's project, asked of the tenant store once per model request:
 * `x-gw-project-id` (or `[auth] project_id` standing in for it) and
 * `x-gw-environment`. In single-team mode the store answers with the
 * configuration file's project whatever the headers say.
 */
import { Effect } from "effect"
import type { GatewayError, InfraError } from "../domain/index.ts"
import { header } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import type { Project } from "../tenancy/project.ts"
import type { TenantStore } from "../tenancy/TenantStore.ts"

export type ProjectResolver = (ctx: HttpRequestContext) => Effect.Effect<Project, GatewayError | InfraError>

export const makeProjectResolver = (store: TenantStore["Service"], defaultProjectId: string | undefined): ProjectResolver =>
  (ctx) =>
    Effect.map(store.resolve({ projectId: header(ctx, "x-gw-project-id") ?? defaultProjectId, environment: header(ctx, "x-gw-environment") }), (project) => {
      // Every answer of a project with a cache says whether it came from it (a hit overrides this).
      if (project.settings.file.cache.enabled) ctx.res.setHeader("x-gw-cache", "miss")
      return project
    })
