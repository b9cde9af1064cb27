/**
 * docs/configuration.md cannot drift from the code: every TOML example in it
 * loads without warnings, and every key of the schema, every environment
 * override and every provider kind's defaults are named in it.
 */
import { Result, SchemaAST } from "effect"
import { readFileSync } from "node:fs"
import { parse } from "smol-toml"
import { describe, expect, it } from "vitest"
import { ConfigFile, ENV_OVERRIDES, settingsFromDocument } from "../../src/config/index.ts"
import { PROVIDER_KIND_INFO, PROVIDER_KINDS } from "../../src/domain/index.ts"

const DOC_PATH = "docs/configuration.md"
const doc = readFileSync(new URL(`../../${DOC_PATH}`, import.meta.url), "utf8")
const blocks = [...doc.matchAll(/```toml\n([\s\S]*?)```/g)].map((match) => match[1])

/** A value for every `env::VAR` an example names, so credential checks see them set. */
const envFor = (text: string): Record<string, string> =>
  Object.fromEntries([...text.matchAll(/env::([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => [match[1], "doc-example-value"]))

/** Every key name the schema knows, at any depth (record keys such as provider ids excluded). */
const schemaKeys = (): ReadonlySet<string> => {
  const names = new Set<string>()
  const visit = (ast: SchemaAST.AST): void => {
    if (SchemaAST.isUnion(ast)) return ast.types.forEach(visit)
    if (SchemaAST.isArrays(ast)) return ast.rest.forEach(visit)
    if (!SchemaAST.isObjects(ast)) return
    for (const signature of ast.propertySignatures) {
      names.add(String(signature.name))
      visit(signature.type)
    }
    for (const index of ast.indexSignatures) visit(index.type)
  }
  visit(SchemaAST.toEncoded(ConfigFile.ast))
  return names
}

describe(DOC_PATH, () => {
  it("has the examples the reference promises", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6)
  })

  it.each(blocks.map((block, index) => [index + 1, block.split("\n").find((line) => line.startsWith("[providers.")) ?? "", block]))(
    "TOML example %i (%s) is a valid configuration without warnings",
    (index, _, block) => {
      const result = settingsFromDocument(parse(block), envFor(block), `${DOC_PATH} example ${index}`)
      if (Result.isFailure(result)) throw result.failure
      expect(result.success.warnings).toEqual([])
    }
  )

  it("every example has [server], the one required section", () => {
    for (const block of blocks) expect(block).toMatch(/^\[server\]$/m)
  })

  it("names every key of the schema", () => {
    const named = (key: string) => [`\`${key}\``, `[${key}]`, `[${key}.`, `.${key}]`].some((form) => doc.includes(form))
    const missing = [...schemaKeys()].filter((key) => !named(key))
    expect(missing).toEqual([])
  })

  it("documents every environment override with the key it overrides", () => {
    for (const { variable, path } of ENV_OVERRIDES) {
      expect(doc).toContain(`| \`${variable}\` | \`${path.join(".")}\` |`)
    }
  })

  it("documents each provider kind's default base URL, auth and convention variable", () => {
    for (const kind of PROVIDER_KINDS) {
      const info = PROVIDER_KIND_INFO[kind]
      const row = doc.split("\n").find((line) => line.startsWith(`| \`${kind}\` |`))
      expect(row, `a row for kind ${kind}`).toBeDefined()
      expect(row).toContain(`\`${info.conventionEnv}\``)
      if (info.defaultBaseUrl !== "") expect(row).toContain(`\`${info.defaultBaseUrl}\``)
      else expect(row).toMatch(/\| none/)
      expect(row).toContain(info.authType === "bearer" ? "Authorization: Bearer" : `\`${info.authName}\``)
    }
  })
})
