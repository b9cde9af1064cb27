/**
 * Where a request's project comes from. Single-team mode: the one project of
 * the configuration file, whatever the request says. Multi-tenant mode: the
 * project named by the request, from its snapshot. The request program asks
 * once per request and runs on what it gets.
 */
import { Context, Effect, Layer } from "effect"
import type { GatewayError, InfraError } from "../domain/index.ts"
import type { Project } from "./project.ts"

/** What a request says about its project (headers, or the platform credentials standing in for them). */
export interface ProjectSelection {
  readonly projectId: string | undefined
  readonly environment: string | undefined
}

export class TenantStore extends Context.Service<TenantStore, {
  readonly resolve: (selection: ProjectSelection) => Effect.Effect<Project, GatewayError | InfraError>
  /** For `/readyz`: whether the store can load projects now. */
  readonly ready: Effect.Effect<boolean>
}>()("gateway/tenancy/TenantStore") {
  /** The configuration file's one project, for every request. */
  static readonly layerStatic = (project: Project): Layer.Layer<TenantStore> => {
    const resolved = Effect.succeed(project)
    return Layer.succeed(TenantStore, TenantStore.of({ resolve: () => resolved, ready: Effect.succeed(true) }))
  }
}
