/**
 * Gateway keys at request time (`[keys]`): who is calling, and what that key
 * may use. With any key configured every `/v1` request must carry
 * `x-gw-authorization: Bearer <key>` (docs/reference/gateway-spec.md §5; the
 * standard `Authorization` stays the caller's provider key).
 *
 * Details
 * - A presented key is hashed (SHA-256) and looked up by its digest: the
 *   gateway never holds a key in clear, and messages never echo one.
 * - Missing, malformed or unknown → 401 `auth`; a model, route or function the
 *   key may not use → 403 `forbidden` (choose-plan.ts asks `allows`).
 * - A key with no `models`, `routes` or `functions` list may use everything.
 *   A key with any list may use only what its lists match: a provider model
 *   by `models` (the name sent or `provider::model`), a route by `routes` (its
 *   id) or `models` (the route's model name sent), a function by `functions`.
 *   Such a key may not use files or native passthrough, which name no model.
 * - `/v1/models` lists what the key may use: the project's catalog filtered,
 *   once per catalog and key.
 */
import { Result } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import { keyDigest } from "../config/index.ts"
import type { CallerLimits, ResolvedKey } from "../config/index.ts"
import { GatewayError } from "../domain/index.ts"
import { catalogLists } from "../routing/catalog.ts"
import type { CatalogEntry, ModelCatalog } from "../routing/catalog.ts"
import type { Project } from "./project.ts"

/** The key a request authenticated with, compiled once at start. */
export interface CallerKey {
  readonly name: string
  /** The project the key works in (`project_id`), when it names one. */
  readonly projectId: string | undefined
  readonly limits: CallerLimits
  /** What the limits stage counts for this key (`key:<name>`); undefined when the key has no limit. */
  readonly subject: { readonly id: string; readonly limits: CallerLimits } | undefined
  /** Whether any of `models`, `routes`, `functions` is set. */
  readonly restricted: boolean
  /** Whether the key may use `model`, resolved to `plan` (`route::id`, `function::name`, `provider::model`). */
  readonly allows: (model: string, plan: string) => boolean
  /** The project's catalog as this key sees it. */
  readonly catalogOf: (project: Project) => ModelCatalog
}

export interface KeyGate {
  /** False when no key is configured: the gateway is open and nothing is checked. */
  readonly enabled: boolean
  readonly authenticate: (headers: IncomingHttpHeaders) => Result.Result<CallerKey, GatewayError>
}

const denied = (message: string): GatewayError => new GatewayError({ status: 401, code: "auth", message, classification: "auth" })

/** The 403 of a key that may not use what the request names. */
export const forbiddenFor = (key: CallerKey, what: string): GatewayError =>
  new GatewayError({ status: 403, code: "forbidden", message: `the gateway key "${key.name}" may not use ${what}`, classification: "forbidden" })

/** A list of globs (`*` the only wildcard) as one anchored expression; undefined for an absent list. */
const globsOf = (globs: ReadonlyArray<string> | undefined): RegExp | undefined =>
  globs === undefined
    ? undefined
    : new RegExp(`^(?:${globs.map((glob) => glob.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")).join("|")})$`)

const matches = (globs: RegExp | undefined, value: string): boolean => globs !== undefined && globs.test(value)

const compileKey = (key: ResolvedKey): CallerKey => {
  const models = globsOf(key.models)
  const routes = globsOf(key.routes)
  const functions = globsOf(key.functions)
  const restricted = models !== undefined || routes !== undefined || functions !== undefined
  const routeIdsOf = (project: Project, model: string): ReadonlyArray<string> =>
    Object.entries(project.settings.file.routes).flatMap(([id, route]) => (route.models.includes(model) ? [id] : []))
  const allows = (model: string, plan: string): boolean => {
    if (!restricted) return true
    const at = plan.indexOf("::")
    const kind = plan.slice(0, at)
    const name = plan.slice(at + 2)
    if (kind === "function") return matches(functions, name)
    if (kind === "route") return matches(routes, name) || matches(models, model)
    return matches(models, model) || matches(models, plan) || matches(models, name)
  }
  const seen = new WeakMap<ModelCatalog, ModelCatalog>()
  const visible = (project: Project, entry: CatalogEntry): boolean =>
    entry.ownedBy === "gateway"
      ? matches(models, entry.id) || routeIdsOf(project, entry.id).some((id) => matches(routes, id))
      : matches(models, entry.id) || (entry.id.includes("::") && matches(models, entry.id.slice(entry.id.indexOf("::") + 2)))
  const catalogOf = (project: Project): ModelCatalog => {
    if (!restricted) return project.catalog
    const known = seen.get(project.catalog)
    if (known !== undefined) return known
    const entries = project.catalog.entries.filter((entry) => visible(project, entry))
    const filtered: ModelCatalog = { entries, byId: new Map(entries.map((entry) => [entry.id, entry])), lists: catalogLists(entries) }
    seen.set(project.catalog, filtered)
    return filtered
  }
  const subject = Object.keys(key.limits).length === 0 ? undefined : { id: `key:${key.name}`, limits: key.limits }
  return { name: key.name, projectId: key.projectId, limits: key.limits, subject, restricted, allows, catalogOf }
}

const BEARER = /^bearer\s+(\S+)\s*$/i

const missing = () => denied("missing gateway key: send x-gw-authorization: Bearer <key>")

export const OPEN_GATE: KeyGate = { enabled: false, authenticate: () => Result.fail(missing()) }

/** The gate over the configured keys; `OPEN_GATE` when there are none. */
export const makeKeyGate = (keys: ReadonlyArray<ResolvedKey>): KeyGate => {
  if (keys.length === 0) return OPEN_GATE
  const byDigest = new Map(keys.map((key) => [key.digest, compileKey(key)]))
  return {
    enabled: true,
    authenticate: (headers) => {
      const sent = headers["x-gw-authorization"]
      const value = Array.isArray(sent) ? sent[0] : sent
      if (value === undefined || value === "") return Result.fail(missing())
      const presented = BEARER.exec(value)?.[1]
      if (presented === undefined) return Result.fail(denied("x-gw-authorization must be `Bearer <gateway key>`"))
      const key = byDigest.get(keyDigest(presented))
      return key === undefined ? Result.fail(denied("the gateway key is not known")) : Result.succeed(key)
    }
  }
}
