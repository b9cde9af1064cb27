/**
 * JSON Schema → Gemini's `Schema` (the OpenAPI 3.0 subset that
 * `functionDeclarations[].parameters` and `generationConfig.responseSchema`
 * take). Gemini answers 400 to a keyword outside the subset, so each schema is
 * rewritten:
 *
 * - kept: `type`, `format`, `title`, `description`, `nullable`, `enum` (of
 *   strings), `items`, `properties`, `required`, `propertyOrdering`,
 *   `minItems`, `maxItems`, `minimum`, `maximum`, `minLength`, `maxLength`,
 *   `pattern`, `minProperties`, `maxProperties`, `default`, `example`, `anyOf`;
 * - rewritten without a change of meaning: `type: [T, "null"]` → `type: T,
 *   nullable: true`; `const: "x"` → `enum: ["x"]`; `oneOf` → `anyOf`; a local
 *   `$ref` (`#/$defs/…`, `#/definitions/…`) is inlined (a recursive one is cut at
 *   its second visit and reported); an object with no properties loses its empty
 *   `properties` (Gemini refuses an empty map);
 * - left out silently, since they change nothing Gemini would generate:
 *   `$schema`, `$id`, `$comment`, `$defs`, `definitions`, `examples`,
 *   `additionalProperties: false`;
 * - any other keyword is left out and reported (its name, after `prefix.`),
 *   since the model is no longer held to it: `additionalProperties` with a
 *   schema, `allOf`, `not`, `exclusiveMinimum`, a non-string `enum`, …
 */
import { isRecord } from "./mapping.ts"

const KEPT = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "items",
  "properties",
  "required",
  "propertyOrdering",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "pattern",
  "minProperties",
  "maxProperties",
  "default",
  "example"
])

const SILENT = new Set(["$schema", "$id", "$comment", "$defs", "definitions", "examples"])

/** Deeper than this a schema is cut (a guard against pathological input, not a Gemini limit). */
const MAX_DEPTH = 32

type Schema = Record<string, unknown>

interface Walk {
  readonly root: Schema
  readonly prefix: string
  readonly dropped: Set<string>
  readonly visiting: Set<string>
}

/** `schema` in Gemini's subset; what changed its meaning is added to `dropped` as `prefix.keyword`. */
export const geminiSchema = (schema: Readonly<Record<string, unknown>>, prefix: string, dropped: Array<string>): Schema => {
  const walk: Walk = { root: schema, prefix, dropped: new Set(), visiting: new Set() }
  const out = convert(schema, walk, 0)
  for (const name of walk.dropped) if (!dropped.includes(name)) dropped.push(name)
  return out
}

const report = (walk: Walk, keyword: string): void => {
  walk.dropped.add(`${walk.prefix}.${keyword}`)
}

const resolveRef = (ref: string, walk: Walk): Schema | undefined => {
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref)
  if (match === null) return undefined
  const defs = walk.root[match[1]]
  const target = isRecord(defs) ? defs[match[2]] : undefined
  return isRecord(target) ? target : undefined
}

const convert = (schema: Schema, walk: Walk, depth: number): Schema => {
  if (depth > MAX_DEPTH) {
    report(walk, "depth")
    return {}
  }
  if (typeof schema.$ref === "string") return convertRef(schema, schema.$ref, walk, depth)
  const out: Schema = {}
  for (const [key, value] of Object.entries(schema)) {
    if (KEPT.has(key)) out[key] = value
    else if (key === "const") constAsEnum(out, value, walk)
    else if (key === "enum") enumOf(out, value, walk)
    else if (key === "anyOf" || key === "oneOf") out.anyOf = schemaList(value, walk, depth)
    else if (key === "additionalProperties" && value === false) continue
    else if (!SILENT.has(key)) report(walk, key)
  }
  typeOf(out)
  if (isRecord(out.items)) out.items = convert(out.items, walk, depth + 1)
  if (isRecord(out.properties)) {
    const properties: Schema = {}
    for (const [name, value] of Object.entries(out.properties)) properties[name] = isRecord(value) ? convert(value, walk, depth + 1) : {}
    if (Object.keys(properties).length > 0) out.properties = properties
    else delete out.properties
  }
  return out
}

const convertRef = (schema: Schema, ref: string, walk: Walk, depth: number): Schema => {
  const target = resolveRef(ref, walk)
  if (target === undefined || walk.visiting.has(ref)) {
    report(walk, "$ref")
    return {}
  }
  walk.visiting.add(ref)
  const { $ref: _ref, ...siblings } = schema
  const out = convert({ ...target, ...siblings }, walk, depth + 1)
  walk.visiting.delete(ref)
  return out
}

const schemaList = (value: unknown, walk: Walk, depth: number): Array<Schema> =>
  Array.isArray(value) ? value.filter(isRecord).map((item) => convert(item, walk, depth + 1)) : []

const constAsEnum = (out: Schema, value: unknown, walk: Walk): void => {
  if (typeof value === "string") out.enum = [value]
  else report(walk, "const")
}

const enumOf = (out: Schema, value: unknown, walk: Walk): void => {
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) out.enum = value
  else report(walk, "enum")
}

/** `type: [T, "null"]` → `type: T, nullable: true` (Gemini takes one type). */
const typeOf = (out: Schema): void => {
  if (!Array.isArray(out.type)) return
  const types = out.type.filter((type) => type !== "null")
  if (types.length < out.type.length) out.nullable = true
  if (types.length === 1) out.type = types[0]
  else {
    delete out.type
    if (types.length > 1) out.anyOf = types.map((type) => ({ type }))
  }
}
