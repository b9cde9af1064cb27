/**
 * Validating a tenant snapshot (multi-tenant mode, docs/multi-tenant.md) with
 * the rules of the gateway's own file: the same schemas, unknown-key
 * warnings, cross-checks and messages as `check-config`, and the same
 * resolved shape (`GatewaySettings`), so whatever compiles the file compiles
 * a snapshot too.
 *
 * What differs, on purpose:
 * - The gateway's own sections ([server], [telemetry], [genai_telemetry],
 *   [auth], [tenant_routing]) are refused: a tenant does not configure the
 *   process it runs in. The resolved settings carry the gateway's values.
 * - Credentials travel inside the snapshot as `{"value": "<key>"}` (or
 *   `"none"`), held as `Redacted` from the moment they are read. A tenant can
 *   never name an `env::VAR` location, and no convention variable applies: an
 *   omitted provider credential means none (the caller's own key only). A
 *   SigV4 provider's AWS keys (`access_key_id`, `secret_access_key`,
 *   `session_token`) travel the same way, each `{"value": "…"}`.
 */
import { Redacted, Result, Schema } from "effect"
import { AWS_KEY_FIELDS } from "./aws-credentials.ts"
import type { SnapshotAwsKeys } from "./aws-credentials.ts"
import { checkConfig } from "./checks.ts"
import { fingerprinted, NO_CREDENTIAL } from "./credentials.ts"
import type { ResolvedCredential } from "./credentials.ts"
import { checkableOf, ConfigError, configFailure, documentDecoder, findingsBeside, unknownKeyFindings } from "./decode.ts"
import type { GatewaySettings } from "./resolved.ts"
import { ConfigFile, GATEWAY_ONLY_SECTIONS, SnapshotFile } from "./schema.ts"
import type { CallerLimits, EndpointType } from "./schema.ts"
import { limitsOf } from "./key-checks.ts"

export interface ValidatedSnapshot {
  /** The snapshot's `version` as text (an integer version is its decimal form). */
  readonly version: string
  /** Endpoint types switched off for the project: such requests get 403 `feature_disabled`. */
  readonly disabledEndpoints: ReadonlySet<EndpointType>
  /** The project's own limits (`project_limits`; empty: none). */
  readonly limits: CallerLimits
  /** The project's configuration, resolved exactly like the gateway's own file. */
  readonly settings: GatewaySettings
}

/** Why a snapshot was refused, told two ways: in full for its publisher, by key path for the log. */
export interface SnapshotRefusal {
  /** The `check-config` message, for the operator who published the snapshot. */
  readonly error: ConfigError
  /**
   * Only the key paths of the problems: what the gateway may log. A message can
   * quote a value, and in a snapshot a misplaced value can be a key.
   */
  readonly problems: ReadonlyArray<string>
}

export type SnapshotValidation = Result.Result<ValidatedSnapshot, SnapshotRefusal>

const decode = documentDecoder(SnapshotFile)

/** Every gateway-only section at its defaults: what the snapshot's cross-checks run against. */
const DEFAULT_FILE: ConfigFile = Schema.decodeUnknownSync(ConfigFile)({ server: {} })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !Redacted.isRedacted(value)

/** A `{"value": "<key>"}` object's key, redacted; undefined for any other shape. */
const inlineKey = (value: unknown): Redacted.Redacted<string> | undefined => {
  if (!isRecord(value) || Object.keys(value).length !== 1) return undefined
  const key = value.value
  if (Redacted.isRedacted(key) && typeof Redacted.value(key) === "string" && Redacted.value(key) !== "") return key as Redacted.Redacted<string>
  return typeof key === "string" && key !== "" ? Redacted.make(key) : undefined
}

/** Why a snapshot's key is refused; the message never repeats a value. */
const refusedKey = (path: string, value: unknown, orNone: boolean): string => {
  const expected = `{"value": "<key>"}${orNone ? ` or write "none"` : ""}`
  if (typeof value === "string" && value.startsWith("env::")) {
    return `${path}: env:: locations are refused in a snapshot (a tenant cannot read the gateway host's environment); carry the key as ${expected}`
  }
  const got = typeof value === "string" ? "a string (not shown)" : Array.isArray(value) ? "an array" : typeof value === "object" ? "another object (not shown)" : typeof value
  return `${path}: expected {"value": "<key>"} with a non-empty key${orNone ? `, or "none"` : ""}; got ${got}`
}

/** The only credential shapes a snapshot may carry. */
const readCredential = (path: string, value: unknown, errors: Array<string>): ResolvedCredential | undefined => {
  if (value === "none") return NO_CREDENTIAL
  const key = inlineKey(value)
  if (key !== undefined) return { location: { kind: "inline" }, ...fingerprinted(key) }
  errors.push(refusedKey(path, value, true))
  return undefined
}

/** A SigV4 provider's AWS keys (`access_key_id`, …), each `{"value": "…"}`, taken out of the entry. */
const readAwsKeys = (path: string, entry: Record<string, unknown>, errors: Array<string>): SnapshotAwsKeys | undefined => {
  const keys: SnapshotAwsKeys = {}
  for (const field of AWS_KEY_FIELDS) {
    if (!(field in entry)) continue
    const key = inlineKey(entry[field])
    if (key === undefined) errors.push(refusedKey(`${path}.${field}`, entry[field], false))
    else keys[field] = key
    delete entry[field]
  }
  return Object.keys(keys).length === 0 ? undefined : keys
}

/**
 * Takes every provider and target `credential` out of a copy of the section,
 * resolving each one. The copy goes on to the schema, so no key is ever part
 * of a decoding message.
 */
const extractCredentials = (
  section: unknown,
  name: "providers" | "targets",
  errors: Array<string>
): {
  readonly section: unknown
  readonly credentials: Map<string, ResolvedCredential>
  readonly aws: Map<string, SnapshotAwsKeys>
} => {
  const credentials = new Map<string, ResolvedCredential>()
  const aws = new Map<string, SnapshotAwsKeys>()
  if (!isRecord(section)) return { section, credentials, aws }
  const stripped: Record<string, unknown> = {}
  for (const [id, entry] of Object.entries(section)) {
    if (!isRecord(entry)) {
      stripped[id] = entry
      continue
    }
    const { credential, ...rest } = entry
    stripped[id] = rest
    if (name === "providers") {
      const keys = readAwsKeys(`${name}.${id}`, rest, errors)
      if (keys !== undefined) aws.set(id, keys)
    }
    if (!("credential" in entry)) continue
    const resolved = readCredential(`${name}.${id}.credential`, credential, errors)
    if (resolved !== undefined) credentials.set(id, resolved)
  }
  return { section: stripped, credentials, aws }
}

/** A refusal: the `check-config` message, and the problems' key paths alone for the log. */
const refuse = (source: string, lines: ReadonlyArray<string>, warnings: ReadonlyArray<string>): SnapshotValidation =>
  Result.fail({
    error: configFailure(source, lines, warnings),
    problems: [...new Set(lines.map((line) => line.split(": ")[0]))]
  })

/**
 * Validates a parsed snapshot. `source` names it in messages (a file path, or
 * the Redis key); `gateway` is the gateway's own file, whose sections the
 * resolved settings carry (their defaults when absent, as in the CLI).
 */
export const snapshotFromDocument = (document: unknown, source: string, gateway: ConfigFile = DEFAULT_FILE): SnapshotValidation => {
  if (!isRecord(document)) {
    return Result.fail({ error: configFailure(source, ["expected a JSON object at the top level"]), problems: ["(top level)"] })
  }
  const errors: Array<string> = []
  const rest: Record<string, unknown> = { ...document }
  for (const section of GATEWAY_ONLY_SECTIONS) {
    if (!(section in rest)) continue
    delete rest[section]
    errors.push(`${section}: not allowed in a snapshot; [${section}] belongs to the gateway's own configuration file`)
  }
  // A project sets how long its stored responses live; the store itself (enabled, url, salt, …) is the gateway's.
  const projectResponses = rest.responses
  if (isRecord(projectResponses)) {
    const others = Object.keys(projectResponses).filter((key) => key !== "store_ttl_seconds")
    if (others.length > 0) {
      errors.push(`responses: only store_ttl_seconds may be set in a snapshot; ${others.join(", ")} belong to the gateway's own configuration file`)
      rest.responses = Object.hasOwn(projectResponses, "store_ttl_seconds") ? { store_ttl_seconds: projectResponses.store_ttl_seconds } : {}
    }
  }
  const providers = extractCredentials(rest.providers, "providers", errors)
  const targets = extractCredentials(rest.targets, "targets", errors)
  if ("providers" in rest) rest.providers = providers.section
  if ("targets" in rest) rest.targets = targets.section

  const unknown = unknownKeyFindings(rest, SnapshotFile)
  errors.push(...unknown.errors)
  const decoded = decode(rest)
  if (Result.isFailure(decoded)) errors.push(...decoded.failure.lines)
  // Every problem in one pass, as for the file: the checks run on what the schema accepted.
  const checkable = checkableOf(decoded)
  if (checkable === undefined) return refuse(source, errors, unknown.warnings)
  const { version, disabled_endpoints, project_limits, responses, ...sections } = checkable
  const checked = checkConfig({ ...DEFAULT_FILE, ...sections }, {
    kind: "snapshot",
    providers: providers.credentials,
    targets: targets.credentials,
    aws: providers.aws
  })
  errors.push(...findingsBeside(decoded, checked.errors, "error"))
  const warnings = [...unknown.warnings, ...findingsBeside(decoded, checked.warnings, "warning")]
  if (errors.length > 0) return refuse(source, errors, warnings)
  return Result.succeed({
    version: String(version),
    disabledEndpoints: new Set(disabled_endpoints),
    limits: limitsOf(project_limits),
    settings: {
      source,
      file: {
        ...sections,
        server: gateway.server,
        telemetry: gateway.telemetry,
        genai_telemetry: gateway.genai_telemetry,
        auth: gateway.auth,
        tenant_routing: gateway.tenant_routing,
        metrics: gateway.metrics,
        // Gateway keys are the gateway's; a project's own limits are its `project_limits`.
        keys: {},
        limits: gateway.limits,
        responses: responses.store_ttl_seconds === undefined ? gateway.responses : { ...gateway.responses, store_ttl_seconds: responses.store_ttl_seconds }
      },
      providers: checked.providers,
      targets: checked.targets,
      keys: [],
      warnings
    }
  })
}
