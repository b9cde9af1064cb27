/**
 * The model catalog behind `GET /v1/models` (docs/reference/gateway-spec.md §2.1): built from the
 * configuration once, no upstream call. Every listed id is a valid `model`
 * value: a name one provider serves, `provider::model` where two providers
 * serve the same name, and the model names of routes.
 */
import type { GatewaySettings } from "../config/index.ts"

export interface CatalogEntry {
  readonly id: string
  /** Provider id (spec: the provider slug), or `gateway` for route models. */
  readonly ownedBy: string
}

export interface ModelCatalog {
  readonly entries: ReadonlyArray<CatalogEntry>
  readonly byId: ReadonlyMap<string, CatalogEntry>
  /** The two list bodies of `GET /v1/models`, rendered with the catalog (once per configuration version). */
  readonly lists: { readonly openAi: string; readonly anthropic: string }
}

const EPOCH = "1970-01-01T00:00:00Z"

/** An entry as the OpenAI SDK's `Model`. */
export const openAiModel = (entry: CatalogEntry) => ({ id: entry.id, object: "model", created: 0, owned_by: entry.ownedBy })
/** An entry as the Anthropic SDK's `ModelInfo`. */
export const anthropicModel = (entry: CatalogEntry) => ({ type: "model", id: entry.id, display_name: entry.id, created_at: EPOCH })

export const buildCatalog = (settings: GatewaySettings): ModelCatalog => {
  const owners = new Map<string, Array<string>>()
  for (const provider of settings.providers.values()) {
    for (const model of provider.models) {
      const list = owners.get(model) ?? []
      if (!list.includes(provider.id)) list.push(provider.id)
      owners.set(model, list)
    }
  }
  const byId = new Map<string, CatalogEntry>()
  const add = (entry: CatalogEntry) => {
    if (!byId.has(entry.id)) byId.set(entry.id, entry)
  }
  for (const route of Object.values(settings.file.routes)) {
    for (const model of route.models) add({ id: model, ownedBy: "gateway" })
  }
  for (const [model, providers] of owners) {
    if (providers.length === 1) add({ id: model, ownedBy: providers[0] })
    else for (const provider of providers) add({ id: `${provider}::${model}`, ownedBy: provider })
  }
  const entries = [...byId.values()]
  return { entries, byId, lists: catalogLists(entries) }
}

/** The two list bodies of `GET /v1/models` for these entries. */
export const catalogLists = (entries: ReadonlyArray<CatalogEntry>): ModelCatalog["lists"] => ({
  openAi: JSON.stringify({ object: "list", data: entries.map(openAiModel) }),
  anthropic: JSON.stringify({
    data: entries.map(anthropicModel),
    has_more: false,
    first_id: entries[0]?.id ?? null,
    last_id: entries[entries.length - 1]?.id ?? null
  })
})
