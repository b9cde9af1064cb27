/**
 * The parts of validation the gateway file and a tenant snapshot share: schema
 * decoding with every issue reported as `key.path: what is wrong`, unknown-key
 * warnings, and the one message format `check-config` prints.
 */
import { Exit, Result, Schema, SchemaIssue } from "effect"
import { formatPath, salvage, valueAt } from "./salvage.ts"
import type { Path, Salvaged } from "./salvage.ts"
import { findUnknownKeys } from "./unknown-keys.ts"

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  message: Schema.String
}) {}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

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

/** A document decoded: its value, or the schema's findings and what could be read of the rest. */
export type DecodedDocument<A> = Result.Result<A, { readonly lines: ReadonlyArray<string>; readonly salvaged: Salvaged<A> | undefined }>

/** What the cross-checks run on: the decoded value, or what could be read of the rest when the schema refused a value. */
export const checkableOf = <A>(decoded: DecodedDocument<A>): A | undefined =>
  Result.isSuccess(decoded) ? decoded.success : decoded.failure.salvaged?.value

/** The cross-checks' findings that stand beside the schema's: all of them when the schema accepted the document. */
export const findingsBeside = (
  decoded: DecodedDocument<unknown>,
  findings: ReadonlyArray<string>,
  severity: "error" | "warning"
): ReadonlyArray<string> => (Result.isSuccess(decoded) ? findings : decoded.failure.salvaged?.independent(findings, severity) ?? [])

/**
 * A decoder for `schema` (built once, at module level) that reports every
 * issue as a `key.path: message` line. `provenance` names the environment
 * variable a value came from, when one did. On failure it also gives the rest
 * of the document decoded with the refused values repaired, when that can be
 * done, so the cross-checks can report their findings in the same pass.
 */
export const documentDecoder = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decode = Schema.decodeUnknownExit(schema)
  const issuesOf = (raw: unknown): Result.Result<S["Type"], ReadonlyArray<{ readonly path: Path; readonly message: string }>> => {
    const decoded = decode(raw, { errors: "all" })
    if (Exit.isSuccess(decoded)) return Result.succeed(decoded.value)
    const issue = decoded.cause.reasons.find((reason) => reason._tag === "Fail")
    if (issue === undefined) return Result.fail([{ path: [], message: String(decoded.cause) }])
    return Result.fail(formatter(issue.error.issue).issues.map(({ path, message }) => ({
      path: (path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment)),
      message
    })))
  }
  const pathsOf = (raw: unknown) => Result.mapError(issuesOf(raw), (issues) => issues.map((issue) => issue.path))
  return (
    raw: unknown,
    provenance: ReadonlyMap<string, string> = new Map()
  ): DecodedDocument<S["Type"]> => {
    const decoded = issuesOf(raw)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
    const issues = decoded.failure
    const lines = issues.map(({ path, message }) => {
      const key = formatPath(path)
      const variable = provenance.get(key)
      return `${key}${variable === undefined ? "" : ` (from ${variable})`}: ${describeIssue(raw, path, message)}`
    })
    return Result.fail({ lines, salvaged: salvage(raw, issues.map((issue) => issue.path), pathsOf) })
  }
}
