/**
 * Environment variable overrides (docs/reference/gateway-spec.md §2.7 table). Applied to the parsed TOML
 * before validation, so an override is checked exactly like a file value; the
 * returned provenance lets error messages name the variable instead of the file.
 */
import { Result } from "effect"

type Kind = "string" | "int" | "float" | "bool"

interface Override {
  readonly variable: string
  readonly path: readonly [section: string, field: string]
  readonly kind: Kind
}

const tenant = (field: string, kind: Kind): Override => ({
  variable: `GATEWAY_TENANT_ROUTING_${field.toUpperCase()}`,
  path: ["tenant_routing", field],
  kind
})

const genai = (field: string, kind: Kind): Override => ({
  variable: `GATEWAY_GENAI_${field.toUpperCase()}`,
  path: ["genai_telemetry", field],
  kind
})

export const ENV_OVERRIDES: ReadonlyArray<Override> = [
  { variable: "GATEWAY_TELEMETRY_ENABLED", path: ["telemetry", "enabled"], kind: "bool" },
  { variable: "OTEL_EXPORTER_OTLP_ENDPOINT", path: ["telemetry", "otlp_endpoint"], kind: "string" },
  { variable: "SERVICE_NAME", path: ["telemetry", "service_name"], kind: "string" },
  { variable: "ENVIRONMENT", path: ["telemetry", "environment"], kind: "string" },
  { variable: "OTEL_TRACES_SAMPLER_RATIO", path: ["telemetry", "sample_ratio"], kind: "float" },
  tenant("enabled", "bool"),
  tenant("redis_url", "string"),
  tenant("lru_capacity", "int"),
  tenant("anti_entropy_interval_secs", "int"),
  tenant("api_fallback_url", "string"),
  tenant("api_fallback_timeout_ms", "int"),
  tenant("api_fallback_auth_token", "string"),
  tenant("lru_idle_timeout_secs", "int"),
  tenant("private_key_path", "string"),
  { variable: "GATEWAY_GENAI_TELEMETRY_ENABLED", path: ["genai_telemetry", "enabled"], kind: "bool" },
  genai("otlp_endpoint", "string"),
  genai("service_name", "string"),
  genai("environment", "string"),
  genai("sample_ratio", "float"),
  genai("capture_content", "bool"),
  genai("otlp_bearer_token", "string")
]

const TRUE = new Set(["true", "1", "yes", "on"])
const FALSE = new Set(["false", "0", "no", "off"])

const convert = (raw: string, kind: Kind): Result.Result<unknown, void> => {
  const text = raw.trim()
  switch (kind) {
    case "string":
      return Result.succeed(raw)
    case "bool": {
      const lower = text.toLowerCase()
      if (TRUE.has(lower)) return Result.succeed(true)
      if (FALSE.has(lower)) return Result.succeed(false)
      return Result.failVoid
    }
    case "int":
      return /^-?\d+$/.test(text) ? Result.succeed(Number(text)) : Result.failVoid
    case "float": {
      const value = Number(text)
      return text !== "" && Number.isFinite(value) ? Result.succeed(value) : Result.failVoid
    }
  }
}

const EXPECTED: Record<Kind, string> = {
  string: "a string",
  int: "an integer",
  float: "a number",
  bool: "true or false"
}

export interface AppliedOverrides {
  /** The TOML document with overrides applied (a copy; the input is not mutated). */
  readonly raw: Record<string, unknown>
  /** Config key path ("tenant_routing.lru_capacity") → the variable that set it. */
  readonly provenance: ReadonlyMap<string, string>
  /** Variables whose value could not be read as the field's type. */
  readonly errors: ReadonlyArray<string>
}

export const applyEnvOverrides = (
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>
): AppliedOverrides => {
  const result: Record<string, unknown> = { ...raw }
  const provenance = new Map<string, string>()
  const errors: Array<string> = []
  for (const override of ENV_OVERRIDES) {
    const value = env[override.variable]
    if (value === undefined) continue
    const [section, field] = override.path
    const converted = convert(value, override.kind)
    if (Result.isFailure(converted)) {
      errors.push(`${override.variable} (overrides ${section}.${field}): expected ${EXPECTED[override.kind]}, got ${JSON.stringify(value)}`)
      continue
    }
    const current = result[section]
    const table = typeof current === "object" && current !== null && !Array.isArray(current) ? current : {}
    result[section] = { ...table, [field]: converted.success }
    provenance.set(`${section}.${field}`, override.variable)
  }
  return { raw: result, provenance, errors }
}
