/**
 * README.md and docs/ as a user reads them after `npm ci`: the README leads
 * to every document; every command shown runs as written (`gateway` is not on
 * the PATH: `npx gateway …` or `npm run gateway -- …`); an example that
 * configures a provider under its kind's own name keeps that kind's default
 * base_url; and the calls made against the shipped configuration name models
 * it serves.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { parse } from "smol-toml"
import { describe, expect, it } from "vitest"
import { isProviderKind, PROVIDER_KIND_INFO } from "../../src/domain/provider-kinds.ts"
import { PROJECT_ROOT } from "../cli/process.ts"

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), "utf8")
const docNames = readdirSync(join(PROJECT_ROOT, "docs")).filter((name) => name.endsWith(".md"))
const documents = ["README.md", ...docNames.map((name) => `docs/${name}`)].map((path) => ({ path, text: read(path) }))

const FENCED = /```[^\n]*\n([\s\S]*?)```/g
const fencedBlocks = (text: string, language = "") =>
  [...text.matchAll(FENCED)].filter((match) => match[0].startsWith(`\`\`\`${language}`)).map((match) => match[1])

/** Each `##`/`###` section of a page, with its heading. */
const sections = (text: string) => text.split(/^(?=#{2,3} )/m)

interface TomlShape {
  readonly providers?: Record<string, { readonly kind?: string; readonly base_url?: string; readonly models?: Array<string> }>
  readonly routes?: Record<string, { readonly models?: Array<string> }>
  readonly functions?: Record<string, unknown>
}

/** Every `model` the shipped configuration answers. */
const servedByShipped = (): Set<string> => {
  const config = parse(read("config/gateway.toml")) as TomlShape
  const served = new Set<string>()
  for (const [id, provider] of Object.entries(config.providers ?? {})) {
    for (const model of provider.models ?? []) served.add(model).add(`${id}::${model}`)
  }
  for (const [id, route] of Object.entries(config.routes ?? {})) {
    served.add(`route::${id}`)
    for (const model of route.models ?? []) served.add(model)
  }
  for (const id of Object.keys(config.functions ?? {})) served.add(`function::${id}`)
  return served
}

const MODEL_NAMES = [/"model": ?"([^"]+)"/g, /\bmodel: ?"([^"]+)"/g, /\bmodel=([\w.:@-]+)/g, /\/v1\/models\/([\w.:@-]+)/g]

describe("README.md and docs/", () => {
  it("the README links every document in docs/", () => {
    const readme = read("README.md")
    expect(docNames.filter((name) => !readme.includes(`](docs/${name})`))).toEqual([])
  })

  it("no command is a bare `gateway …`, which is not on the PATH after npm ci", () => {
    const bare: Array<string> = []
    for (const { path, text } of documents) {
      for (const block of fencedBlocks(text)) {
        for (const line of block.split("\n")) if (/^\s*(?:\$\s+)?gateway\s/.test(line)) bare.push(`${path}: ${line.trim()}`)
      }
      for (const match of text.replace(FENCED, "").matchAll(/`(gateway\s[^`]*)`/g)) bare.push(`${path}: ${match[1]}`)
    }
    expect(bare).toEqual([])
  })

  it("an example that configures a provider under its kind's name keeps the kind's default base_url", () => {
    const differing: Array<string> = []
    for (const { path, text } of documents) {
      for (const block of fencedBlocks(text, "toml")) {
        const providers = (parse(block) as TomlShape).providers ?? {}
        for (const [id, provider] of Object.entries(providers)) {
          if (!isProviderKind(id) || provider.kind !== undefined || provider.base_url === undefined) continue
          const fallback = PROVIDER_KIND_INFO[id].defaultBaseUrl
          if (fallback !== "" && provider.base_url !== fallback) differing.push(`${path}: [providers.${id}] ${provider.base_url} (default ${fallback})`)
        }
      }
    }
    expect(differing).toEqual([])
  })

  it("the calls made against the shipped configuration name models it serves", () => {
    const served = servedByShipped()
    const calls = [
      ...sections(read("README.md")).filter((section) => section.startsWith("## Call it")),
      // A section that shows a provider of its own is not against the shipped configuration.
      ...sections(read("docs/endpoints.md")).filter((section) => !/```toml\n[\s\S]*?\[providers\./.test(section))
    ]
    const named = calls.flatMap((section) => MODEL_NAMES.flatMap((pattern) => [...section.matchAll(pattern)].map((match) => match[1])))
    expect(named.length).toBeGreaterThan(5)
    expect([...new Set(named)].filter((model) => !served.has(model))).toEqual([])
  })
})
