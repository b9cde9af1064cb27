/**
 * The AWS credentials a SigV4 provider (`auth_type = "sigv4"`, Bedrock) signs with.
 *
 * In the gateway's own file each of the three keys is a location of its own,
 * `access_key_id = "env::VAR"`, `secret_access_key`, `session_token`, defaulting to
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (one
 * gateway can then sign for two AWS accounts). A named variable that is unset
 * stops the start, as a target's `env::VAR` does; the defaults only warn.
 *
 * A tenant snapshot carries the three as `{"value": "…"}` (sealed like every
 * other key in it) and never reads the host's environment: no default applies.
 */
import { Redacted } from "effect"
import type { ProviderKind } from "../domain/index.ts"
import { parseCredentialLocation } from "./credentials.ts"
import type { AwsCredentials, ResolvedProvider } from "./resolved.ts"

export const AWS_KEY_FIELDS = ["access_key_id", "secret_access_key", "session_token"] as const
export type AwsKeyField = typeof AWS_KEY_FIELDS[number]

/** The variable each field defaults to in the gateway's own file. */
const DEFAULT_VARIABLE: Readonly<Record<AwsKeyField, string>> = {
  access_key_id: "AWS_ACCESS_KEY_ID",
  secret_access_key: "AWS_SECRET_ACCESS_KEY",
  session_token: "AWS_SESSION_TOKEN"
}

/** A snapshot's AWS keys of one provider, already read as redacted values. */
export type SnapshotAwsKeys = Partial<Record<AwsKeyField, Redacted.Redacted<string>>>

/** Where the keys come from: the gateway's environment (with the file's locations), or a snapshot. */
export type AwsKeySource =
  | {
    readonly kind: "environment"
    readonly env: Readonly<Record<string, string | undefined>>
    /** The provider's `access_key_id` … fields as written (`env::VAR`), when set. */
    readonly locations: Partial<Record<AwsKeyField, string>>
  }
  | { readonly kind: "snapshot"; readonly keys: SnapshotAwsKeys | undefined }

export interface AwsFindings {
  error(path: string, message: string): void
  warn(path: string, message: string): void
}

/** How `check-config` shows each key: where it comes from and whether it is set, never its value. */
export type AwsKeyDescriptions = Readonly<Record<AwsKeyField, string>>

interface ReadKey {
  readonly value: string | undefined
  readonly described: string
}

/** One key from the environment; null after an error (a variable the file names must be set). */
const fromEnvironment = (
  path: string,
  field: AwsKeyField,
  source: Extract<AwsKeySource, { kind: "environment" }>,
  findings: AwsFindings
): ReadKey | null => {
  const written = source.locations[field]
  const location = written === undefined ? { kind: "env" as const, variable: DEFAULT_VARIABLE[field] } : parseCredentialLocation(written)
  if (written !== undefined && location?.kind !== "env") {
    findings.error(`${path}.${field}`, `expected "env::<VARIABLE>", got ${JSON.stringify(written.startsWith("env::") ? written : "<redacted literal>")} (keys never belong in the file)`)
    return null
  }
  const variable = location?.kind === "env" ? location.variable : DEFAULT_VARIABLE[field]
  const raw = source.env[variable]
  const value = raw === undefined || raw === "" ? undefined : raw
  if (value === undefined && written !== undefined) {
    findings.error(`${path}.${field}`, `environment variable ${variable} is not set`)
    return null
  }
  return { value, described: `env::${variable}${written === undefined ? " (default)" : ""} ${value === undefined ? "[unset]" : "[set, redacted]"}` }
}

const fromSnapshot = (field: AwsKeyField, keys: SnapshotAwsKeys | undefined): ReadKey => {
  const key = keys?.[field]
  return key === undefined ? { value: undefined, described: "none" } : { value: Redacted.value(key), described: "inline [set, redacted]" }
}

/**
 * The provider's three keys: `credentials` undefined (and reported) when the id or the
 * secret is missing; null after an error.
 */
export const awsCredentialsOf = (
  path: string,
  source: AwsKeySource,
  findings: AwsFindings
): { readonly credentials: AwsCredentials | undefined; readonly described: AwsKeyDescriptions } | null => {
  const read: Partial<Record<AwsKeyField, ReadKey>> = {}
  let failed = false
  for (const field of AWS_KEY_FIELDS) {
    const key = source.kind === "snapshot" ? fromSnapshot(field, source.keys) : fromEnvironment(path, field, source, findings)
    if (key === null) failed = true
    else read[field] = key
  }
  if (failed) return null
  const { access_key_id: id, secret_access_key: secret, session_token: token } = read as Record<AwsKeyField, ReadKey>
  const described = { access_key_id: id.described, secret_access_key: secret.described, session_token: token.described }
  if (id.value === undefined || secret.value === undefined) {
    const missing: AwsKeyField = id.value === undefined ? "access_key_id" : "secret_access_key"
    const where = source.kind === "snapshot" ? "the snapshot carries none" : `env::${DEFAULT_VARIABLE[missing]} is not set`
    findings.warn(`${path}.${missing}`, `${where}; requests to this provider are refused until it is given`)
    return { credentials: undefined, described }
  }
  return {
    credentials: {
      accessKeyId: id.value,
      secretAccessKey: Redacted.make(secret.value),
      ...(token.value === undefined ? {} : { sessionToken: Redacted.make(token.value) })
    },
    described
  }
}

/**
 * SigV4 settings of a provider (`auth_type = "sigv4"`, Bedrock only): the region
 * (`region`, else the one in a `bedrock-runtime.<region>.amazonaws.com` URL) and its
 * AWS credentials. Undefined after an error.
 */
export const sigv4Of = (
  path: string,
  kind: ProviderKind,
  region: string | undefined,
  baseUrl: string,
  source: AwsKeySource,
  findings: AwsFindings
): ResolvedProvider["sigv4"] => {
  if (kind !== "bedrock") {
    findings.error(`${path}.auth_type`, `"sigv4" signs requests to Bedrock only; kind "${kind}" takes "bearer", "api_key_header" or "query_param"`)
    return undefined
  }
  const resolved = region ?? /^bedrock-runtime\.([a-z0-9-]+)\.amazonaws\.com$/.exec(new URL(baseUrl).hostname)?.[1]
  if (resolved === undefined) {
    findings.error(`${path}.region`, `required with auth_type = "sigv4" when base_url is not https://bedrock-runtime.<region>.amazonaws.com`)
    return undefined
  }
  const keys = awsCredentialsOf(path, source, findings)
  return keys === null ? undefined : { region: resolved, ...keys }
}
