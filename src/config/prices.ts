/**
 * Prices per model and the cost of a request's usage. A model's price is its
 * `[models.<name>]` fields (`input_per_mtok`, `output_per_mtok`,
 * `cache_read_per_mtok`, `cache_write_per_mtok`, USD per million tokens)
 * over the shipped table below, which covers the models of the shipped
 * configuration (config/gateway.toml) at their providers' list prices.
 *
 * Details
 * - Usage counts input with its cached part included (OpenAI's convention,
 *   src/domain/chat.ts): cache reads and writes are taken out of the input
 *   and priced at their own rates (the input price when a model has none).
 * - Reasoning tokens are output tokens, and counted in them already.
 * - A model with no input or no output price has no cost: nothing is
 *   guessed, and no budget is charged for it.
 */
import type { Usage } from "../domain/index.ts"
import type { ConfigFile } from "./schema.ts"

/** USD per million tokens. */
export interface ModelPrice {
  readonly input: number
  readonly output: number
  readonly cacheRead: number
  readonly cacheWrite: number
}

type PriceFields = { readonly input: number; readonly output: number; readonly cacheRead?: number; readonly cacheWrite?: number }

/** List prices of the shipped configuration's token-priced models (USD per million tokens). */
export const SHIPPED_PRICES: Readonly<Record<string, PriceFields>> = {
  "gpt-4.1": { input: 2, output: 8, cacheRead: 0.5 },
  "gpt-4o": { input: 2.5, output: 10, cacheRead: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cacheRead: 0.075 },
  "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cacheRead: 0.025 },
  "text-embedding-3-small": { input: 0.02, output: 0 },
  "claude-sonnet-4-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-haiku-4-5": { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  "claude-opus-4-1": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 }
}

/** The price of `model`: its `[models]` fields over the shipped table; undefined when input or output is unknown. */
export const modelPrice = (models: ConfigFile["models"], model: string): ModelPrice | undefined => {
  const own = Object.hasOwn(models, model) ? models[model] : undefined
  const shipped = Object.hasOwn(SHIPPED_PRICES, model) ? SHIPPED_PRICES[model] : undefined
  const input = own?.input_per_mtok ?? shipped?.input
  const output = own?.output_per_mtok ?? shipped?.output
  if (input === undefined || output === undefined) return undefined
  return {
    input,
    output,
    cacheRead: own?.cache_read_per_mtok ?? shipped?.cacheRead ?? input,
    cacheWrite: own?.cache_write_per_mtok ?? shipped?.cacheWrite ?? input
  }
}

/** A configuration's prices, looked up per model name (compiled once per configuration). */
export const priceTable = (models: ConfigFile["models"]): (model: string) => ModelPrice | undefined => {
  const known = new Map<string, ModelPrice | undefined>()
  return (model) => {
    if (known.has(model)) return known.get(model)
    const price = modelPrice(models, model)
    if (known.size < 10_000) known.set(model, price)
    return price
  }
}

/** USD of `usage` at `price`. */
export const costOf = (price: ModelPrice, usage: Usage): number => {
  const cacheRead = usage.cacheReadTokens ?? 0
  const cacheWrite = usage.cacheWriteTokens ?? 0
  const plainInput = Math.max(0, usage.inputTokens - cacheRead - cacheWrite)
  return (plainInput * price.input + cacheRead * price.cacheRead + cacheWrite * price.cacheWrite + usage.outputTokens * price.output) / 1_000_000
}

/** A cost as the log line, the span and `x-gw-cost-usd` show it: USD to a millionth of a cent. */
export const roundCost = (usd: number): number => Math.round(usd * 1e8) / 1e8
