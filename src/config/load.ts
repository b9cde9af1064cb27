/**
 * Loading the configuration: file → TOML → unknown keys → environment
 * overrides → schema validation → cross-checks → resolved settings. Every
 * stage reports, so one run lists every problem: the cross-checks run on what
 * the schema accepted even when it refused a value (salvage.ts).
 *
 * Every failure is one `ConfigError` whose message names the file, the key
 * path and what is wrong; `main.ts` prints it and exits non-zero.
 */
import { Result } from "effect"
import { readFileSync } from "node:fs"
import { parse, TomlError } from "smol-toml"
import { checkConfig } from "./checks.ts"
import { checkableOf, ConfigError, configFailure as fail, documentDecoder, findingsBeside, unknownKeyFindings } from "./decode.ts"
import { applyEnvOverrides } from "./env.ts"
import type { GatewaySettings } from "./resolved.ts"
import { ConfigFile } from "./schema.ts"

export { ConfigError }

export const DEFAULT_CONFIG_PATH = "config/gateway.toml"

type Env = Readonly<Record<string, string | undefined>>

/** `GATEWAY_CONFIG`, else `config/gateway.toml` relative to the working directory. */
export const configPath = (explicit: string | undefined, env: Env): string =>
  explicit ?? (env.GATEWAY_CONFIG !== undefined && env.GATEWAY_CONFIG !== "" ? env.GATEWAY_CONFIG : DEFAULT_CONFIG_PATH)

const decode = documentDecoder(ConfigFile)

/**
 * Validates an already-parsed configuration document. Used for the TOML file,
 * and for tests (`GatewayConfig.layerTest`); tenant snapshots go through
 * `snapshotFromDocument` (snapshot.ts), which shares its rules.
 */
export const settingsFromDocument = (
  document: unknown,
  env: Env,
  source: string
): Result.Result<GatewaySettings, ConfigError> => {
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return Result.fail(fail(source, ["expected a TOML table at the top level"]))
  }
  const unknown = unknownKeyFindings(document, ConfigFile)
  const overridden = applyEnvOverrides(document as Record<string, unknown>, env)
  const decoded = decode(overridden.raw, overridden.provenance)
  // Every problem in one pass: when the schema refused a value, the checks still run on the rest.
  const checkable = checkableOf(decoded)
  const checked = checkable === undefined ? undefined : checkConfig(checkable, { kind: "environment", env })
  // A finding about a value an environment variable set names the variable, as schema errors do.
  const checkErrors = findingsBeside(decoded, checked?.errors ?? [], "error").map((line) => {
    const at = line.indexOf(": ")
    const variable = at === -1 ? undefined : overridden.provenance.get(line.slice(0, at))
    return variable === undefined ? line : `${line.slice(0, at)} (from ${variable})${line.slice(at)}`
  })
  const errors = [...unknown.errors, ...overridden.errors, ...(Result.isSuccess(decoded) ? [] : decoded.failure.lines), ...checkErrors]
  const warnings = [...unknown.warnings, ...findingsBeside(decoded, checked?.warnings ?? [], "warning")]
  if (Result.isFailure(decoded) || checked === undefined || errors.length > 0) return Result.fail(fail(source, errors, warnings))
  const file = decoded.success
  const settled = checked.antiEntropyIntervalSecs === file.tenant_routing.anti_entropy_interval_secs
    ? file
    : { ...file, tenant_routing: { ...file.tenant_routing, anti_entropy_interval_secs: checked.antiEntropyIntervalSecs } }
  return Result.succeed({
    source,
    file: settled,
    providers: checked.providers,
    targets: checked.targets,
    keys: checked.keys,
    warnings,
    ...(checked.adminKey === undefined ? {} : { adminKey: checked.adminKey })
  })
}

/** Reads and validates the configuration file. */
export const loadSettings = (
  path: string,
  env: Env
): Result.Result<GatewaySettings, ConfigError> => {
  let text: string
  try {
    text = readFileSync(path, "utf8")
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : String((cause as Error).message)
    return Result.fail(new ConfigError({ message: `cannot read configuration ${path}: ${reason}` }))
  }
  let document: unknown
  try {
    document = parse(text)
  } catch (cause) {
    const detail = cause instanceof TomlError
      ? `line ${cause.line}, column ${cause.column}: ${cause.message.split("\n")[0].replace(/^Invalid TOML document: /, "")}`
      : String(cause)
    return Result.fail(new ConfigError({ message: `invalid TOML in ${path}: ${detail}` }))
  }
  return settingsFromDocument(document, env, path)
}
