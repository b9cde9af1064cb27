/**
 * The timeout of a call that goes to a provider rather than to a model (file
 * operations, passthrough): the provider's `timeout_ms`, then
 * `[defaults.provider]`, then 30000 ms (spec 2.7 without the model and target
 * steps). The transport applies it to the wait for the response head and to
 * every gap between two response chunks.
 */
import type { GatewaySettings } from "../../config/index.ts"
import { DEFAULT_TIMEOUT_MS } from "../../routing/plan.ts"

export const providerTimeoutMs = (settings: GatewaySettings, providerId: string): number =>
  settings.providers.get(providerId)?.timeoutMs ?? settings.file.defaults.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS
