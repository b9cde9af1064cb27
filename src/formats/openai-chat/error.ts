/**
 * OpenAI error vocabulary inside streams (docs/reference/openai-chat.md §5.6, §6.2). An error
 * chunk carries no HTTP status, so one is inferred from its `type`/`code` for
 * classification (`classifyUpstream`) and for the caller's own error type.
 */

const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  invalid_api_key: 401,
  model_not_found: 404,
  context_length_exceeded: 400,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  server_is_overloaded: 503
}

const STATUS_BY_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  request_forbidden: 403,
  not_found_error: 404,
  rate_limit_error: 429,
  requests: 429,
  tokens: 429,
  insufficient_quota: 429,
  server_error: 500,
  api_error: 500,
  service_unavailable_error: 503,
  timeout_error: 504,
  overloaded_error: 529
}

/**
 * Status an OpenAI (or OpenAI-compatible) error object stands for. Some
 * compatible servers (vLLM) put the HTTP status in `code`.
 */
export const statusOfOpenAiError = (type: string | undefined, code: unknown): number => {
  if (typeof code === "number" && code >= 400 && code <= 599) return code
  if (typeof code === "string" && STATUS_BY_CODE[code] !== undefined) return STATUS_BY_CODE[code]
  return (type !== undefined ? STATUS_BY_TYPE[type] : undefined) ?? 500
}
