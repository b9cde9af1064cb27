/**
 * Anthropic error vocabulary inside streams (docs/reference/anthropic-messages.md §5.5, §6.2).
 * An `event: error` carries no HTTP status, so one is inferred from its `type`
 * for classification (`classifyUpstream`) and for the caller's own error type.
 */

const STATUS_BY_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  conflict_error: 409,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  overloaded_error: 529
}

/** Status an Anthropic error `type` stands for (500 when unknown). */
export const statusOfAnthropicError = (type: string | undefined): number =>
  (type !== undefined ? STATUS_BY_TYPE[type] : undefined) ?? 500
