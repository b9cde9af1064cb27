/**
 * Where a request's project comes from. Single-team mode: the one project of
 * the configuration file, whatever the request says (named after the platform
 * project when `[auth]` authenticated one, so caches and telemetry stay apart
 * per project). Multi-tenant mode (`[tenant_routing]`): the project and
 * environment the request names, compiled from its snapshot (store.ts). The
 * request program asks once per request and runs on what it gets.
 */
import { Context, Effect, Layer, Result } from "effect"
import type { GatewaySettings } from "../config/index.ts"
import type { GatewayError, InfraError } from "../domain/index.ts"
import { Log } from "../infra/log.ts"
import type { ProjectIdentity, Project, StageCompilers } from "./project.ts"
import { compileProject } from "./project.ts"
import { tenantFromRequest } from "./selection.ts"
import type { makeTenantStoreFromSnapshots, TestTenantStore } from "./store.ts"
import type { CompileSnapshot, LoadedSnapshot, TenantStore as SnapshotStore } from "./contracts.ts"

/** What a request says about its project. */
export interface ProjectSelection {
  /** `x-gw-project-id`, as sent. */
  readonly projectId: string | undefined
  /** `[auth] project_id`: the project when the header is absent or empty. */
  readonly configuredProjectId?: string | undefined
  /** `x-gw-environment`. */
  readonly environment: string | undefined
  /** The project the platform exchange authenticated the request for: it wins over the header. */
  readonly authenticated?: string | undefined
}

type Shape = {
  readonly resolve: (selection: ProjectSelection) => Effect.Effect<Project, GatewayError | InfraError>
  /** For `/readyz`: whether the store can load projects now. */
  readonly ready: Effect.Effect<boolean>
  /** `tenant_redis` in multi-tenant mode: `/readyz` names the check. */
  readonly readinessName: string
  /** The tenant snapshots loaded now, with their versions (`/status`); none in single-team mode. */
  readonly loaded: () => ReadonlyArray<LoadedSnapshot>
}

/** Same-configuration projects named per authenticated platform project, at most this many kept. */
const MAX_NAMED = 10_000

/**
 * Compiles a tenant's snapshot. Where its cache lives is the operator's
 * choice, not the tenant's: `url` and `pool_size` come from the gateway's own
 * `[cache]`, so a snapshot cannot point the gateway at another Redis.
 */
const compilerOf = (stages: StageCompilers, gateway?: GatewaySettings): CompileSnapshot<Project> => (snapshot, identity) => {
  const projectIdentity: ProjectIdentity = { projectId: identity.projectId, environment: identity.envSlug, version: identity.version }
  const own = gateway?.file.cache
  const settings = own === undefined
    ? snapshot.settings
    : { ...snapshot.settings, file: { ...snapshot.settings.file, cache: { ...snapshot.settings.file.cache, url: own.url, pool_size: own.pool_size } } }
  return compileProject(settings, projectIdentity, stages, snapshot.disabledEndpoints, snapshot.limits)
}

/** The multi-tenant shape over a snapshot store: the request's tenant, checked, then its project. */
const overSnapshots = (store: SnapshotStore<Project>): Shape => ({
  resolve: (selection) => {
    const tenant = tenantFromRequest(selection.authenticated ?? selection.projectId, selection.environment, selection.configuredProjectId)
    return Result.isFailure(tenant) ? Effect.fail(tenant.failure) : store.resolve(tenant.success)
  },
  ready: store.ready,
  readinessName: "tenant_redis",
  loaded: store.loaded
})

export class TenantStore extends Context.Service<TenantStore, Shape>()("gateway/tenancy/TenantStore") {
  /** The configuration file's one project, for every request. */
  static readonly layerStatic = (project: Project): Layer.Layer<TenantStore> => {
    const resolved = Effect.succeed(project)
    const named = new Map<string, Effect.Effect<Project>>()
    return Layer.succeed(TenantStore, TenantStore.of({
      resolve: (selection) => {
        const id = selection.authenticated
        if (id === undefined || id === project.projectId) return resolved
        let known = named.get(id)
        if (known === undefined) {
          if (named.size >= MAX_NAMED) named.clear()
          known = Effect.succeed({ ...project, projectId: id })
          named.set(id, known)
        }
        return known
      },
      ready: Effect.succeed(true),
      readinessName: "projects",
      loaded: () => []
    }))
  }

  /**
   * Snapshots in Redis (`[tenant_routing]`), compiled with the stages'
   * compilers; closed with the layer. A store that cannot start (an unreadable
   * private key) fails the layer with `startError(message)`.
   */
  static readonly layer = <E>(settings: GatewaySettings, stages: StageCompilers, startError: (message: string) => E): Layer.Layer<TenantStore, E, Log> =>
    Layer.effect(
      TenantStore,
      Effect.gen(function*() {
        const log = yield* Log
        // Redis and the snapshot machinery are loaded only in this mode.
        const { makeTenantStore, tenantStoreOptions } = yield* Effect.promise(() => import("./store.ts"))
        const store = yield* makeTenantStore(tenantStoreOptions(settings, log), compilerOf(stages, settings)).pipe(
          Effect.mapError((error) => startError(`tenant routing: ${error.message}`))
        )
        return TenantStore.of(overSnapshots(store))
      })
    )

  /**
   * Multi-tenant mode over an in-memory map of snapshots (documents or stored
   * text), for tests; `store` publishes and takes the store down.
   */
  static readonly layerSnapshots = (
    snapshots: Parameters<typeof makeTenantStoreFromSnapshots<Project>>[0],
    stages: StageCompilers,
    options: Parameters<typeof makeTenantStoreFromSnapshots<Project>>[2] = {},
    onStore?: (store: TestTenantStore<Project>) => void
  ): Layer.Layer<TenantStore> =>
    Layer.effect(
      TenantStore,
      Effect.gen(function*() {
        const { makeTenantStoreFromSnapshots } = yield* Effect.promise(() => import("./store.ts"))
        const store = yield* makeTenantStoreFromSnapshots(snapshots, compilerOf(stages), options)
        onStore?.(store)
        return TenantStore.of(overSnapshots(store))
      })
    )
}
