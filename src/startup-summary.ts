/**
 * The `serving` line logged once at start: what this gateway serves, so an
 * operator sees a forgotten key or a stage left off before the first request
 * fails. Built from the validated configuration, once; nothing per request.
 *
 * A credential is described by where it comes from and whether it was found,
 * never by its value. Providers whose convention variable is unset (callers
 * must bring their own key) are named again in `credential_unset`.
 *
 * `access` says who may call: `keys` (the `[keys]` names in `keys`),
 * `platform_auth` (`[auth]`), or `open`: anyone who reaches the port spends
 * the configured provider keys.
 */
import { describeCredential } from "./config/index.ts"
import type { GatewaySettings } from "./config/index.ts"

export const servingSummary = (settings: GatewaySettings) => {
  const { file } = settings
  const providers = [...settings.providers.values()]
  const stages = [
    file.security.enabled && "guardrails",
    file.security.enabled && file.security.output_guardrails && "output_guardrails",
    file.cache.enabled && "cache",
    file.telemetry.enabled && "telemetry",
    file.genai_telemetry.enabled && "genai_telemetry",
    file.auth.enabled && "auth",
    file.tenant_routing.enabled && "tenant_routing"
  ].filter((stage) => stage !== false)
  return {
    providers: providers.map((provider) => ({
      id: provider.id,
      kind: provider.kind,
      models: provider.models,
      credential: describeCredential(provider.credential)
    })),
    credential_unset: providers.flatMap(({ id, credential: { location, value } }) =>
      location.kind === "env" && value === undefined ? [`${id} (${location.variable})`] : []
    ),
    access: settings.keys.length > 0 ? "keys" : file.auth.enabled ? "platform_auth" : "open",
    keys: settings.keys.map((key) => key.name),
    routes: Object.keys(file.routes),
    functions: Object.keys(file.functions),
    stages
  }
}
