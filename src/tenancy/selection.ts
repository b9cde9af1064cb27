/**
 * Which tenant a request belongs to, and where its snapshot lives.
 *
 * The project comes from `x-gw-project-id` (else `[auth] project_id`), the
 * environment from `x-gw-environment` (else `production`). Both are checked
 * before they become part of a Redis key: letters, digits, `.`, `_`, `-`
 * only, so a header can never add a `:` (another key's shape), `{}` (a Redis
 * Cluster hash tag), whitespace or control characters.
 */
import { Result } from "effect"
import { GatewayError } from "../domain/index.ts"

const PROJECT_HEADER = "x-gw-project-id"
const ENVIRONMENT_HEADER = "x-gw-environment"
const DEFAULT_ENVIRONMENT = "production"

/** Channel announcing `{projectId, envSlug, version}` after a publish. */
export const UPDATES_CHANNEL = "gw:routing:updates"

const PROJECT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const ENV_SLUG = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

declare const TenantIdBrand: unique symbol

/** A checked project and environment; only `tenantId` makes one, so every Redis key built from it is well formed. */
export interface TenantId {
  readonly projectId: string
  readonly envSlug: string
  /** `gw:routing:{projectId}:{envSlug}`: the snapshot key, also the cache key. */
  readonly key: string
  readonly [TenantIdBrand]: true
}

/** `gw:routing:{projectId}:envs`: the set of the project's environments, kept by publishing. */
export const environmentsKey = (projectId: string): string => `gw:routing:${projectId}:envs`

const invalid = (message: string) => new GatewayError({ status: 400, code: "invalid_request", message })

/** A project id and environment slug checked for use in Redis keys. */
export const tenantId = (projectId: string, envSlug: string = DEFAULT_ENVIRONMENT): Result.Result<TenantId, GatewayError> => {
  if (!PROJECT_ID.test(projectId)) {
    return Result.fail(invalid(`${PROJECT_HEADER} must be 1 to 128 letters, digits, ".", "_" or "-", starting with a letter or digit`))
  }
  if (!ENV_SLUG.test(envSlug)) {
    return Result.fail(invalid(`${ENVIRONMENT_HEADER} must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`))
  }
  return Result.succeed({ projectId, envSlug, key: `gw:routing:${projectId}:${envSlug}` } as TenantId)
}

/**
 * The tenant of a request in multi-tenant mode, from its headers (values as
 * Node gives them) and `[auth] project_id`. No project at all is a 400: in
 * this mode there is no configuration to fall back on.
 */
export const tenantFromRequest = (
  projectHeader: string | ReadonlyArray<string> | undefined,
  environmentHeader: string | ReadonlyArray<string> | undefined,
  configuredProjectId: string | undefined
): Result.Result<TenantId, GatewayError> => {
  const project = single(projectHeader) ?? (configuredProjectId === "" ? undefined : configuredProjectId)
  if (project === undefined) {
    return Result.fail(invalid(`a project is required: send the ${PROJECT_HEADER} header (multi-tenant mode has no default project unless [auth] project_id is set)`))
  }
  return tenantId(project, single(environmentHeader) ?? DEFAULT_ENVIRONMENT)
}

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined => {
  const text = typeof value === "string" ? value : value?.[0]
  return text === undefined || text === "" ? undefined : text
}

/** An update announcement, or undefined when the message is not one (ignored). */
export const parseUpdate = (message: string): { readonly projectId: string; readonly envSlug: string; readonly version: string } | undefined => {
  try {
    const value = JSON.parse(message) as { projectId?: unknown; envSlug?: unknown; version?: unknown }
    const { projectId, envSlug, version } = value
    if (typeof projectId !== "string" || typeof envSlug !== "string") return undefined
    if (typeof version !== "string" && typeof version !== "number") return undefined
    return { projectId, envSlug, version: String(version) }
  } catch {
    return undefined
  }
}
