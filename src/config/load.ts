/**
 * Loading the configuration: file → TOML → unknown-key warnings → environment
 * overrides → schema validation → cross-checks → resolved settings.
 *
 * Every failure is one `ConfigError` whose message names the file, the key
 * path and what is wrong; `main.ts` prints it and exits non-zero.
 */
import { Exit, Schema, SchemaIssue } from "effect"
import { readFileSync } from "node:fs"
import { parse, TomlError } from "smol-toml"
import { checkConfig } from "./checks.ts"
import { applyEnvOverrides } from "./env.ts"
import type { GatewaySettings } from "./resolved.ts"
import { ConfigFile } from "./schema.ts"
import { findUnknownKeys } from "./unknown-keys.ts"

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  message: Schema.String
}) {}

export const DEFAULT_CONFIG_PATH = "config/gateway.toml"

type Env = Readonly<Record<string, string | undefined>>

/** `GATEWAY_CONFIG`, else `config/gateway.toml` relative to the working directory. */
export const configPath = (explicit: string | undefined, env: Env): string =>
  explicit ?? (env.GATEWAY_CONFIG !== undefined && env.GATEWAY_CONFIG !== "" ? env.GATEWAY_CONFIG : DEFAULT_CONFIG_PATH)

const decode = Schema.decodeUnknownExit(ConfigFile)
const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`),
    ""
  )

const valueAt = (raw: unknown, path: ReadonlyArray<PropertyKey>): unknown =>
  path.reduce<unknown>(
    (value, key) => (typeof value === "object" && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined),
    raw
  )

const describeIssue = (raw: unknown, path: ReadonlyArray<PropertyKey>, message: string): string => {
  if (message === "Missing key") return "is required"
  const value = valueAt(raw, path)
  const shown = value === undefined || message.includes(", got ") ? "" : `, got ${JSON.stringify(value)}`
  return `${message.charAt(0).toLowerCase()}${message.slice(1)}${shown}`
}

const fail = (source: string, lines: ReadonlyArray<string>, hints: ReadonlyArray<string> = []): ConfigError =>
  new ConfigError({
    message: (lines.length === 1
      ? `invalid configuration in ${source}: ${lines[0]}`
      : `invalid configuration in ${source}:\n${lines.map((line) => `  - ${line}`).join("\n")}`) +
      (hints.length === 0 ? "" : `\nwarnings:\n${hints.map((line) => `  - ${line}`).join("\n")}`)
  })

/**
 * Validates an already-parsed configuration document. Used for the TOML file,
 * for tests (`GatewayConfig.layerTest`) and for tenant snapshots.
 */
export const settingsFromDocument = (
  document: unknown,
  env: Env,
  source: string
): { readonly ok: true; readonly settings: GatewaySettings } | { readonly ok: false; readonly error: ConfigError } => {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return { ok: false, error: fail(source, ["expected a TOML table at the top level"]) }
  }
  const warnings: Array<string> = findUnknownKeys(document, ConfigFile.ast).map(({ path, suggestion }) =>
    `${path}: unknown key${suggestion === undefined ? "" : `; did you mean "${suggestion}"?`}`
  )
  const overridden = applyEnvOverrides(document as Record<string, unknown>, env)
  if (overridden.errors.length > 0) return { ok: false, error: fail(source, overridden.errors, warnings) }

  const decoded = decode(overridden.raw, { errors: "all" })
  if (Exit.isFailure(decoded)) {
    const issue = decoded.cause.reasons.find((reason) => reason._tag === "Fail")
    const lines = issue === undefined
      ? [String(decoded.cause)]
      : formatter(issue.error.issue).issues.map(({ path: rawPath, message }) => {
        const path = (rawPath ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment))
        const key = formatPath(path)
        const variable = overridden.provenance.get(key)
        return `${key}${variable === undefined ? "" : ` (from ${variable})`}: ${describeIssue(overridden.raw, path, message)}`
      })
    return { ok: false, error: fail(source, lines, warnings) }
  }
  const file = decoded.value
  const checked = checkConfig(file, env)
  if (checked.errors.length > 0) {
    // A finding about a value an environment variable set names the variable, as schema errors do.
    const named = checked.errors.map((line) => {
      const at = line.indexOf(": ")
      const variable = at === -1 ? undefined : overridden.provenance.get(line.slice(0, at))
      return variable === undefined ? line : `${line.slice(0, at)} (from ${variable})${line.slice(at)}`
    })
    return { ok: false, error: fail(source, named, [...warnings, ...checked.warnings]) }
  }
  const settled = checked.antiEntropyIntervalSecs === file.tenant_routing.anti_entropy_interval_secs
    ? file
    : { ...file, tenant_routing: { ...file.tenant_routing, anti_entropy_interval_secs: checked.antiEntropyIntervalSecs } }
  return {
    ok: true,
    settings: {
      source,
      file: settled,
      providers: checked.providers,
      targets: checked.targets,
      warnings: [...warnings, ...checked.warnings]
    }
  }
}

/** Reads and validates the configuration file. */
export const loadSettings = (
  path: string,
  env: Env
): { readonly ok: true; readonly settings: GatewaySettings } | { readonly ok: false; readonly error: ConfigError } => {
  let text: string
  try {
    text = readFileSync(path, "utf8")
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : String((cause as Error).message)
    return { ok: false, error: new ConfigError({ message: `cannot read configuration ${path}: ${reason}` }) }
  }
  let document: unknown
  try {
    document = parse(text)
  } catch (cause) {
    const detail = cause instanceof TomlError
      ? `line ${cause.line}, column ${cause.column}: ${cause.message.split("\n")[0].replace(/^Invalid TOML document: /, "")}`
      : String(cause)
    return { ok: false, error: new ConfigError({ message: `invalid TOML in ${path}: ${detail}` }) }
  }
  return settingsFromDocument(document, env, path)
}
