/**
 * Unknown-key detection: walks the parsed TOML alongside the encoded side of
 * the `ConfigFile` schema and reports every key the schema does not know, with
 * the known key it most likely meant. Derived from the schema itself, so a new
 * field never needs a second list here.
 */
import { SchemaAST } from "effect"
import { closestName } from "./did-you-mean.ts"

export interface UnknownKey {
  readonly path: string
  readonly suggestion?: string | undefined
  /** The key holds a table (`[provider.openai]`), not a value. */
  readonly isTable: boolean
}

/** The closest known key, when it is close enough to be a plausible typo. */
const closestKey = (key: string, known: ReadonlyArray<string>): string | undefined => {
  // A key that is the start of a known one (`ttl` → `ttl_seconds`) is the likeliest intent.
  const lower = key.toLowerCase()
  const prefixed = known.filter((candidate) => candidate.toLowerCase().startsWith(lower) && lower.length >= 3)
  if (prefixed.length === 1) return prefixed[0]
  return closestName(key, known)
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const unwrap = (ast: SchemaAST.AST): SchemaAST.AST => {
  // Optional keys and defaults become unions with `undefined` on the encoded side.
  if (SchemaAST.isUnion(ast)) {
    const objects = ast.types.find((member) => SchemaAST.isObjects(member) || SchemaAST.isArrays(member))
    if (objects !== undefined) return objects
  }
  return ast
}

const walk = (value: unknown, ast: SchemaAST.AST, path: string, out: Array<UnknownKey>): void => {
  const node = unwrap(ast)
  if (SchemaAST.isArrays(node)) {
    const element = node.rest[0]
    if (Array.isArray(value) && element !== undefined) {
      value.forEach((item, index) => walk(item, element, `${path}[${index}]`, out))
    }
    return
  }
  if (!SchemaAST.isObjects(node) || !isRecord(value)) return
  const known = new Map(node.propertySignatures.map((signature) => [String(signature.name), signature.type]))
  const index = node.indexSignatures[0]
  for (const [key, child] of Object.entries(value)) {
    const childPath = path === "" ? key : `${path}.${key}`
    const fieldAst = known.get(key)
    if (fieldAst !== undefined) {
      walk(child, fieldAst, childPath, out)
    } else if (index !== undefined) {
      // A record (`providers.<id>`) recurses; a struct with rest (variant parameters) accepts any key.
      if (known.size === 0) walk(child, index.type, childPath, out)
    } else {
      out.push({ path: childPath, suggestion: closestKey(key, [...known.keys()]), isTable: isRecord(child) })
    }
  }
}

export const findUnknownKeys = (raw: unknown, schemaAst: SchemaAST.AST): ReadonlyArray<UnknownKey> => {
  const out: Array<UnknownKey> = []
  walk(raw, SchemaAST.toEncoded(schemaAst), "", out)
  return out
}
