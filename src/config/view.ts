/**
 * The resolved configuration for humans (`gateway check-config`): every
 * section with defaults filled in, credentials described by location and
 * whether they are set, secrets replaced by a marker.
 */
import { describeCredential } from "./credentials.ts"
import { parseRedisUrl, redisLogTarget } from "./redis-url.ts"
import type { GatewaySettings } from "./resolved.ts"

const REDACTED = "[redacted]"

/** A URL's password (`redis://user:secret@host`) replaced by a marker; other values unchanged. */
const urlWithoutPassword = <A extends string | undefined>(value: A): A => {
  if (value === undefined || !value.includes("@")) return value
  try {
    const url = new URL(value)
    if (url.password === "") return value
    url.password = "redacted"
    return url.href as A
  } catch {
    // A cluster's list of seeds is no URL to `new URL`.
    return (parseRedisUrl(value) === undefined ? value : redisLogTarget(value).shown) as A
  }
}

/** The resolved configuration for humans: credentials described, never shown. */
export const redactedView = (settings: GatewaySettings): unknown => {
  const { file } = settings
  const secret = (value: string | undefined) => (value === undefined || value === "" ? value : REDACTED)
  return {
    ...file,
    providers: Object.fromEntries(
      // Keys as the file spells them, so a line of this output can be pasted back into the file.
      [...settings.providers.values()].map((provider) => [provider.id, {
        kind: provider.kind,
        base_url: urlWithoutPassword(provider.baseUrl),
        models: provider.models,
        credential: describeCredential(provider.credential),
        auth_type: provider.authType,
        auth_header_name: provider.authType === "bearer" ? undefined : provider.authName,
        timeout_ms: provider.timeoutMs,
        ttft_ms: provider.ttftMs,
        api_version: provider.kind === "azure" ? provider.apiVersion : undefined,
        region: provider.sigv4?.region,
        ...(provider.sigv4?.described ?? { access_key_id: undefined, secret_access_key: undefined, session_token: undefined }),
        project: provider.vertex?.project,
        location: provider.vertex?.location,
        publisher: provider.vertex?.publisher,
        // A key file's path (not its content), or "adc".
        credentials_file: provider.google === undefined ? undefined : provider.google.kind === "adc" ? "adc" : provider.google.path,
        max_tokens_param: provider.family === "openai" ? provider.maxTokensParam : undefined,
        responses_api: provider.family === "openai" ? provider.responsesApi : undefined
      }])
    ),
    targets: Object.fromEntries(
      [...settings.targets.values()].map((target) => [target.id, {
        // The provider::model form names the provider the target resolved to.
        model: `${target.providerId}::${target.model}`,
        credential: target.credential === undefined ? undefined : describeCredential(target.credential),
        weight: target.weight,
        timeout_ms: target.timeoutMs,
        ttft_ms: target.ttftMs,
        hedge_after_ms: target.hedgeAfterMs,
        max_hedges: target.maxHedges,
        on_stream_break: target.onStreamBreak
      }])
    ),
    // The terms are policy an operator may not want printed: their number only.
    security: { ...file.security, blocklist: `[${file.security.blocklist.length} terms, not shown]` },
    telemetry: { ...file.telemetry, otlp_endpoint: urlWithoutPassword(file.telemetry.otlp_endpoint) },
    auth: { ...file.auth, exchange_url: urlWithoutPassword(file.auth.exchange_url), api_token: secret(file.auth.api_token) },
    tenant_routing: {
      ...file.tenant_routing,
      redis_url: urlWithoutPassword(file.tenant_routing.redis_url),
      api_fallback_url: urlWithoutPassword(file.tenant_routing.api_fallback_url),
      api_fallback_auth_token: secret(file.tenant_routing.api_fallback_auth_token)
    },
    genai_telemetry: {
      ...file.genai_telemetry,
      otlp_endpoint: urlWithoutPassword(file.genai_telemetry.otlp_endpoint),
      otlp_bearer_token: secret(file.genai_telemetry.otlp_bearer_token)
    },
    cache: { ...file.cache, url: urlWithoutPassword(file.cache.url), encrypt_salt: secret(file.cache.encrypt_salt) },
    limits: { ...file.limits, url: urlWithoutPassword(file.limits.url) },
    responses: { ...file.responses, url: urlWithoutPassword(file.responses.url), encrypt_salt: secret(file.responses.encrypt_salt) }
  }
}

