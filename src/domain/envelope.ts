/**
 * Error envelopes per caller format (docs/reference/gateway-spec.md §2.6, 7; docs/reference/DESIGN.md "Errors").
 *
 * Pure rendering: a failure and the caller's wire family in, status, headers
 * and body out. The HTTP layer writes the result; streams use `streamErrorFrame`.
 */
import type { ErrorClass, GatewayError, InfraError, UpstreamError } from "./errors.ts"
import type { CallerFormat, WireFamily } from "./sdk.ts"

export interface RenderedError {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** JSON text, or the upstream's own bytes when forwarded verbatim. */
  readonly body: string | Uint8Array
  readonly contentType: string
}

const JSON_TYPE = "application/json"

const OPENAI_TYPE_CODE: Record<ErrorClass, readonly [type: string, code: string]> = {
  auth: ["authentication_error", "invalid_api_key"],
  forbidden: ["permission_error", "permission_denied"],
  bad_request: ["invalid_request_error", "invalid_request"],
  quota: ["insufficient_quota", "insufficient_quota"],
  rate_limit: ["rate_limit_error", "rate_limit_exceeded"],
  overloaded: ["rate_limit_error", "rate_limit_exceeded"],
  content_policy: ["invalid_request_error", "content_policy_violation"],
  model_not_found: ["invalid_request_error", "model_not_found"],
  org_verification_required: ["permission_error", "org_verification_required"],
  upstream: ["api_error", "upstream_error"],
  feature_disabled: ["permission_error", "feature_disabled"]
}

const ANTHROPIC_TYPE: Record<ErrorClass, string> = {
  auth: "authentication_error",
  forbidden: "permission_error",
  bad_request: "invalid_request_error",
  quota: "rate_limit_error",
  rate_limit: "rate_limit_error",
  overloaded: "overloaded_error",
  content_policy: "invalid_request_error",
  model_not_found: "not_found_error",
  org_verification_required: "permission_error",
  upstream: "api_error",
  feature_disabled: "permission_error"
}

/** OpenAI `error.type` / `error.code` the gateway uses for a classification. */
export const openAiTypeAndCode = (reason: ErrorClass): readonly [string, string] => OPENAI_TYPE_CODE[reason]

/** Anthropic `error.type` for a classification (413 has its own type). */
export const anthropicType = (reason: ErrorClass, status: number): string =>
  reason === "bad_request" && status === 413 ? "request_too_large" : ANTHROPIC_TYPE[reason]

const openAiBody = (message: string, type: string, code: string | null, param: string | null = null): string =>
  JSON.stringify({ error: { message, type, param, code } })

/** `request_id` at the top level, as Anthropic's own errors carry it (the SDK reads the `request-id` header). */
const anthropicBody = (message: string, type: string, code?: string, requestId?: string): string => {
  const error = code === undefined ? { type, message } : { type, message, code }
  return JSON.stringify(requestId === undefined ? { type: "error", error } : { type: "error", error, request_id: requestId })
}

const decoder = new TextDecoder()

/** Whether a body is a well-formed error envelope of the given family (forwardable verbatim). */
const isEnvelopeOf = (family: WireFamily, body: Uint8Array | undefined): boolean => {
  if (body === undefined || body.byteLength === 0) return false
  try {
    const json = JSON.parse(decoder.decode(body)) as { type?: unknown; error?: { message?: unknown } }
    if (typeof json?.error !== "object" || json.error === null || typeof json.error.message !== "string") {
      return false
    }
    return family === "anthropic" ? json.type === "error" : true
  } catch {
    return false
  }
}

/** What a withheld upstream failure says (docs/reference/gateway-spec.md §7.3.6): what happened, never the upstream's own text. */
const upstreamMessage = (error: UpstreamError): string => {
  if (error.timedOut) return `provider timed out (${error.message})`
  if (error.upstreamStatus === 0) return `provider connection failed (${error.message})`
  if (error.inStream === true) return "provider reported an error inside its stream"
  // A success status with a body the gateway could not use: the message is the gateway's own finding.
  if (error.upstreamStatus < 300) return `provider sent an invalid response (${error.message})`
  return `provider returned status ${error.upstreamStatus}`
}

/** The headers every provider error carries (docs/reference/gateway-spec.md §4.4, 7.2), whatever its body. */
export const classificationHeaders = (error: UpstreamError): Record<string, string> => {
  const headers: Record<string, string> = { "x-gw-error-code": error.reason }
  if (error.reached) headers["x-gw-upstream-provider"] = error.provider
  const wait = error.retryAfterMs
  if (wait !== undefined) {
    // What the upstream asked for, in both forms SDKs read: whole seconds (at least 1 unless it said 0) and milliseconds.
    headers["retry-after"] = String(wait === 0 ? 0 : Math.max(1, Math.ceil(wait / 1000)))
    headers["retry-after-ms"] = String(Math.round(wait))
  }
  if (error.reason === "quota") headers["x-should-retry"] = "false"
  return headers
}

/**
 * Renders an upstream failure for the caller (docs/reference/gateway-spec.md §7.3):
 * - `upstream` (5xx, network, timeout): body withheld, `provider returned status N`;
 * - same family and a well-formed upstream envelope: the upstream bytes verbatim;
 * - otherwise the upstream message in the caller's envelope, type/code from the
 *   classification; an unrecognized body gets a generic message.
 * `requestId` goes into a messages-style body the gateway writes (a verbatim one keeps the upstream's).
 */
export const renderUpstreamError = (error: UpstreamError, caller: WireFamily, requestId?: string): RenderedError => {
  const status = error.status
  const headers = classificationHeaders(error)
  if (error.reason !== "upstream" && error.family === caller && isEnvelopeOf(caller, error.body)) {
    return { status, headers, body: error.body!, contentType: JSON_TYPE }
  }
  // Otherwise the message classification read from the body (or the gateway's own, for a call never sent).
  const message = error.reason === "upstream" ? upstreamMessage(error) : error.message
  if (caller === "anthropic") {
    return { status, headers, body: anthropicBody(message, anthropicType(error.reason, status), undefined, requestId), contentType: JSON_TYPE }
  }
  const [type, code] = openAiTypeAndCode(error.reason)
  return { status, headers, body: openAiBody(message, type, code), contentType: JSON_TYPE }
}

const ANTHROPIC_TYPE_BY_STATUS: Record<number, string> = {
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  503: "api_error"
}

/**
 * Gateway-originated errors: no classification header (docs/reference/gateway-spec.md §7.4),
 * except those the specification classifies without a provider (the platform auth
 * layer, a feature a project switched off): those carry `x-gw-error-code`.
 */
export const renderGatewayError = (error: GatewayError, caller: WireFamily, requestId?: string): RenderedError => {
  const classified = error.classification
  const headers: Record<string, string> = classified === undefined ? {} : { "x-gw-error-code": classified }
  if (caller === "anthropic") {
    const type = classified !== undefined ? ANTHROPIC_TYPE[classified] : ANTHROPIC_TYPE_BY_STATUS[error.status] ?? "invalid_request_error"
    return { status: error.status, headers, body: anthropicBody(error.message, type, error.code, requestId), contentType: JSON_TYPE }
  }
  // A classified refusal reads as the provider error of its class would (docs/reference/DESIGN.md "Errors"): OpenAI SDKs key on `code`.
  const [type, code] = classified !== undefined ? OPENAI_TYPE_CODE[classified] : ["invalid_request_error", error.code]
  return {
    status: error.status,
    headers,
    body: openAiBody(error.message, type, code, error.param ?? null),
    contentType: JSON_TYPE
  }
}

/** docs/reference/gateway-spec.md §7.4: INFRA_UNAVAILABLE carries the three retry headers, the others none. */
export const renderInfraError = (error: InfraError, caller: WireFamily, requestId?: string): RenderedError => {
  const headers: Record<string, string> = {}
  if (error.code === "INFRA_UNAVAILABLE") {
    const ms = Math.max(1, Math.round(error.retryAfterMs ?? 1000))
    headers["x-should-retry"] = "true"
    headers["retry-after-ms"] = String(ms)
    headers["retry-after"] = String(Math.max(1, Math.ceil(ms / 1000)))
  }
  const type = error.code.toLowerCase()
  const body = caller === "anthropic"
    ? anthropicBody(error.message, type, error.code, requestId)
    : openAiBody(error.message, type, error.code)
  return { status: error.status, headers, body, contentType: JSON_TYPE }
}

/**
 * The mid-stream error frame of docs/reference/gateway-spec.md §6.1.5 in the caller's format. After it the
 * stream ends with no success terminator.
 */
export const streamErrorFrame = (
  caller: CallerFormat,
  reason: ErrorClass,
  message: string,
  status = 500
): string => {
  if (caller === "anthropic") {
    return `event: error\ndata: ${anthropicBody(message, anthropicType(reason, status))}\n\n`
  }
  const [type, code] = openAiTypeAndCode(reason)
  if (caller === "responses") {
    // The Responses `error` event, with the nested `error` object older clients read too.
    const fields = `"code":"${code}","message":${JSON.stringify(message)},"param":null`
    return `event: error\ndata: {"type":"error",${fields},"error":{"type":"${type}",${fields}}}\n\n`
  }
  return `data: ${openAiBody(message, type, code)}\n\n`
}
