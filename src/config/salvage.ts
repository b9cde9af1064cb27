/**
 * Reading the rest of a document the schema refused, so the cross-checks can
 * run too and every problem in a file is reported in one pass: a refused
 * value is dropped (its default applies) or, for a required key, replaced by
 * a stand-in that adds no finding of its own. What the checks then say about
 * a repaired value, or about the entry whose shape it decides, is left out:
 * the schema has already reported it.
 */
import { Result } from "effect"

/** Stand-ins for required keys, chosen so the checks say nothing about them: "fallback" takes any number of targets. */
const STAND_INS: Readonly<Record<string, unknown>> = {
  strategy: "fallback",
  endpoint: "chat",
  weight: 1,
  models: [],
  targets: [],
  model: "(refused)",
  version: "(refused)"
}

/** Tables whose keys are ids: dropping an entry would turn every reference to it into a second, false finding. */
const ID_TABLES: ReadonlySet<PropertyKey> = new Set(["providers", "models", "targets", "routes", "functions"])

/** At most this many rounds of repair, then the schema's findings stand alone. */
const MAX_ROUNDS = 3

export type Path = ReadonlyArray<PropertyKey>

export interface Salvaged<A> {
  readonly value: A
  /** The `key.path: message` findings of the checks on `value` that do not depend on a repaired value. */
  readonly independent: (findings: ReadonlyArray<string>, severity: "error" | "warning") => ReadonlyArray<string>
}

const isContainer = (value: unknown): value is Record<PropertyKey, unknown> => typeof value === "object" && value !== null

const clone = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(clone)
    : isContainer(value)
    ? Object.fromEntries(Object.entries(value).map(([key, child]) => [key, clone(child)]))
    : value

export const formatPath = (path: Path): string =>
  path.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`),
    ""
  )

export const valueAt = (document: unknown, path: Path): unknown =>
  path.reduce<unknown>((value, key) => (isContainer(value) ? value[key] : undefined), document)

/**
 * Repairs the value at `issuePath` in place and gives the path repaired;
 * undefined when that would cause false findings elsewhere. A bad list element
 * is marked in `dropped` and left out after the round (the list keeps its
 * other elements: a provider's models still resolve its targets).
 */
const repair = (document: unknown, issuePath: Path, dropped: Map<Array<unknown>, Set<number>>): Path | undefined => {
  const lastKey = issuePath.findLastIndex((key) => typeof key !== "number")
  const path = issuePath.slice(0, lastKey + 1)
  if (path.length === 0 || (path.length === 2 && ID_TABLES.has(path[0]))) return undefined
  if (lastKey < issuePath.length - 1) {
    const list = valueAt(document, path)
    if (!Array.isArray(list)) return undefined
    const indexes = dropped.get(list) ?? new Set<number>()
    dropped.set(list, indexes.add(issuePath[lastKey + 1] as number))
    return path
  }
  const parent = valueAt(document, path.slice(0, -1))
  if (!isContainer(parent)) return undefined
  const key = path[path.length - 1] as string
  if (key in STAND_INS) parent[key] = clone(STAND_INS[key])
  else delete parent[key]
  return path
}

/**
 * Decodes a copy of `raw` after repairing the values at `issuePaths`, and again
 * after repairing what `decodeOnce` reports then, for a few rounds.
 */
export const salvage = <A>(
  raw: unknown,
  issuePaths: ReadonlyArray<Path>,
  decodeOnce: (document: unknown) => Result.Result<A, ReadonlyArray<Path>>
): Salvaged<A> | undefined => {
  const document = clone(raw)
  const repaired: Array<{ readonly at: string; readonly entry: string }> = []
  let paths = issuePaths
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const dropped = new Map<Array<unknown>, Set<number>>()
    for (const issuePath of paths) {
      const path = repair(document, issuePath, dropped)
      if (path === undefined) return undefined
      repaired.push({ at: formatPath(path), entry: formatPath(path.slice(0, -1)) })
    }
    for (const [list, indexes] of dropped) {
      const kept = list.filter((_, index) => !indexes.has(index))
      list.splice(0, list.length, ...kept)
    }
    const decoded = decodeOnce(document)
    if (Result.isSuccess(decoded)) {
      return {
        value: decoded.success,
        independent: (findings, severity) =>
          findings.filter((line) => !repaired.some((r) => dependsOn(line.slice(0, line.indexOf(": ")), severity, r)))
      }
    }
    paths = decoded.failure
  }
  return undefined
}

const isAtOrUnder = (path: string, prefix: string): boolean =>
  path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`)

/**
 * A finding at the repaired key or under it; an error about its entry or one of
 * the entry's own keys (a route's `targets` count depends on its strategy); any
 * warning inside the entry. Findings about list elements and nested tables of
 * the entry (an unknown target in its list) do not depend on the repair.
 */
const dependsOn = (path: string, severity: "error" | "warning", repaired: { readonly at: string; readonly entry: string }): boolean => {
  if (isAtOrUnder(path, repaired.at)) return true
  // A whole section repaired (`server = 5`): its default applies, nothing else depends on it.
  if (repaired.entry === "") return false
  if (severity === "warning") return isAtOrUnder(path, repaired.entry)
  if (path === repaired.entry) return true
  return path.startsWith(`${repaired.entry}.`) && !/[.[]/.test(path.slice(repaired.entry.length + 1))
}
