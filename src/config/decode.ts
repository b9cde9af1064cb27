/**
 * The parts of validation the gateway file and a tenant snapshot share: schema
 * decoding with every issue reported as `key.path: what is wrong`, unknown-key
 * warnings, and the one message format `check-config` prints.
 */
import { Exit, Schema, SchemaIssue } from "effect"
import { findUnknownKeys } from "./unknown-keys.ts"

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  message: Schema.String
}) {}

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

/** One `ConfigError`: the problems as lines, then the warnings found so far. */
export const configFailure = (source: string, lines: ReadonlyArray<string>, hints: ReadonlyArray<string> = []): ConfigError =>
  new ConfigError({
    message: (lines.length === 1
      ? `invalid configuration in ${source}: ${lines[0]}`
      : `invalid configuration in ${source}:\n${lines.map((line) => `  - ${line}`).join("\n")}`) +
      (hints.length === 0 ? "" : `\nwarnings:\n${hints.map((line) => `  - ${line}`).join("\n")}`)
  })

/**
 * Every key the schema does not know, as `path: unknown …; did you mean "…"?`.
 * A top-level one is an error: a misspelt `[provider.openai]` or `[route.x]`
 * would otherwise start a gateway with nothing in it. Keys inside a known
 * table only warn.
 */
export const unknownKeyFindings = (
  document: unknown,
  schema: Schema.Top
): { readonly errors: Array<string>; readonly warnings: Array<string> } => {
  const errors: Array<string> = []
  const warnings: Array<string> = []
  for (const { path, suggestion, isTable } of findUnknownKeys(document, schema.ast)) {
    const hint = suggestion === undefined ? "" : `; did you mean "${suggestion}"?`
    const topLevel = !/[.[]/.test(path)
    if (topLevel) errors.push(`${path}: unknown top-level ${isTable ? "table" : "key"}${hint}`)
    else warnings.push(`${path}: unknown key${hint}`)
  }
  return { errors, warnings }
}

/**
 * A decoder for `schema` (built once, at module level) that reports every
 * issue as a `key.path: message` line. `provenance` names the environment
 * variable a value came from, when one did.
 */
export const documentDecoder = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decode = Schema.decodeUnknownExit(schema)
  return (
    raw: unknown,
    provenance: ReadonlyMap<string, string> = new Map()
  ): { readonly ok: true; readonly value: S["Type"] } | { readonly ok: false; readonly lines: ReadonlyArray<string> } => {
    const decoded = decode(raw, { errors: "all" })
    if (Exit.isSuccess(decoded)) return { ok: true, value: decoded.value }
    const issue = decoded.cause.reasons.find((reason) => reason._tag === "Fail")
    const lines = issue === undefined
      ? [String(decoded.cause)]
      : formatter(issue.error.issue).issues.map(({ path: rawPath, message }) => {
        const path = (rawPath ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment))
        const key = formatPath(path)
        const variable = provenance.get(key)
        return `${key}${variable === undefined ? "" : ` (from ${variable})`}: ${describeIssue(raw, path, message)}`
      })
    return { ok: false, lines }
  }
}
