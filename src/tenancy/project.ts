/**
 * A project's compiled configuration: what every model request runs on. In
 * single-team mode there is one, compiled from the TOML file at start; in
 * multi-tenant mode each project's snapshot compiles to one, once per version.
 * Nothing downstream knows which mode produced it: the routing table, the
 * model catalog, the guardrail policy and the cache settings all come from here.
 */
import { priceTable } from "../config/index.ts"
import type { CallerLimits, EndpointType, GatewaySettings, ModelPrice } from "../config/index.ts"
import { compileProvider } from "../providers/adapter.ts"
import { buildCatalog } from "../routing/catalog.ts"
import type { ModelCatalog } from "../routing/catalog.ts"
import { compileRoutingTable } from "../routing/table.ts"
import type { RoutingTable } from "../routing/table.ts"
import type { GuardPolicy, SecuritySection } from "../pipeline/security/index.ts"

export interface ProjectIdentity {
  /** `default` for the single-team configuration file. */
  readonly projectId: string
  readonly environment: string
  /** The snapshot's version, or `file` for the configuration file. */
  readonly version: string
}

export interface Project extends ProjectIdentity {
  /** Providers, targets, routes, functions, models and the `[security]` and `[cache]` sections. */
  readonly settings: GatewaySettings
  readonly table: RoutingTable
  readonly catalog: ModelCatalog
  /** The `[security]` section compiled (PII scanners, the blocklist automaton). */
  readonly guard: GuardPolicy
  /** Endpoint types switched off for this project: such a request is a 403 `feature_disabled`. */
  readonly disabledEndpoints: ReadonlySet<EndpointType>
  /** What the limits stage counts for the project (`project:<id>`); undefined when it has no limit. */
  readonly subject: { readonly id: string; readonly limits: CallerLimits } | undefined
  /** The price of a model name (`[models]` over the shipped table); undefined when unknown. */
  readonly priceOf: (model: string) => ModelPrice | undefined
}

export const STATIC_IDENTITY: ProjectIdentity = { projectId: "default", environment: "production", version: "file" }

/** How the stages compile their sections; the composition root passes the services' own. */
export interface StageCompilers {
  readonly guard: (section: SecuritySection) => GuardPolicy
}

/** Compiles a validated configuration into a project (once per configuration version). */
export const compileProject = (
  settings: GatewaySettings,
  identity: ProjectIdentity,
  stages: StageCompilers,
  disabledEndpoints: ReadonlySet<EndpointType> = new Set(),
  limits: CallerLimits = {}
): Project => ({
  ...identity,
  settings,
  table: compileRoutingTable(settings, compileProvider),
  catalog: buildCatalog(settings),
  guard: stages.guard(settings.file.security),
  disabledEndpoints,
  subject: Object.keys(limits).length === 0 ? undefined : { id: `project:${identity.projectId}`, limits },
  priceOf: priceTable(settings.file.models)
})
