/**
 * The application trace's span names and attribute keys (docs/operations.md
 * lists them): one place, read by the span helpers (spans.ts) and the tracer
 * that writes spans (tracer.ts).
 */
export const HTTP = {
  requestMethod: "http.request.method",
  route: "http.route",
  responseStatusCode: "http.response.status_code",
  urlPath: "url.path",
  urlScheme: "url.scheme"
} as const

export const SPAN = {
  resolveModel: "gateway.resolve_model",
  attempt: "gateway.upstream_attempt",
  guardrail: "gateway.guardrail_scan",
  cacheLookup: "gateway.cache_lookup"
} as const

/** Attributes of the application trace beyond the HTTP ones. */
export const ATTR = {
  requestId: "gateway.request_id",
  requestedModel: "gateway.request.model",
  plan: "gateway.plan",
  variant: "gateway.variant",
  attemptNumber: "gateway.attempt.number",
  providerId: "gateway.provider.id",
  providerName: "gen_ai.provider.name",
  targetId: "gateway.target.id",
  upstreamModel: "gateway.upstream.model",
  path: "gateway.path",
  retryDelayMs: "gateway.retry.delay_ms",
  hedge: "gateway.hedge",
  errorType: "error.type",
  upstreamStatus: "gateway.upstream.status_code",
  upstreamErrorBody: "gateway.upstream.error_body",
  serverAddress: "server.address",
  serverPort: "server.port",
  guardrailDirection: "gateway.guardrail.direction",
  guardrailOutcome: "gateway.guardrail.outcome",
  cacheOutcome: "gateway.cache.outcome",
  cacheMode: "gateway.cache.mode"
} as const
