/**
 * Error classification (docs/reference/gateway-spec.md §7.2) and the errors the pipeline carries.
 *
 * One upstream failure type with a `reason` (the classification) drives retry,
 * failover and rendering; gateway-originated errors carry their own status and
 * `error.code` and no classification header (docs/reference/gateway-spec.md §7.4, docs/reference/DESIGN.md "Errors").
 */
import { Schema } from "effect"
import type { StreamError } from "./chat.ts"
import type { ProviderWire } from "./sdk.ts"

export const ERROR_CLASSES = [
  "auth",
  "forbidden",
  "bad_request",
  "quota",
  "rate_limit",
  "overloaded",
  "content_policy",
  "model_not_found",
  "org_verification_required",
  "upstream",
  "feature_disabled"
] as const

/** The value of `x-gw-error-code`. */
export type ErrorClass = typeof ERROR_CLASSES[number]

/** What routing does after an attempt failed with this class (docs/reference/DESIGN.md "Plans"). */
export type Disposition = "retry" | "next_target" | "stop"

export const dispositionOf = (reason: ErrorClass): Disposition => {
  switch (reason) {
    case "rate_limit":
    case "overloaded":
    case "upstream":
      return "retry"
    case "auth":
    case "forbidden":
    case "quota":
    case "model_not_found":
    case "org_verification_required":
      return "next_target"
    case "bad_request":
    case "content_policy":
    case "feature_disabled":
      return "stop"
  }
}

/** The parts of an upstream error body that classification looks at. */
export interface UpstreamErrorDetails {
  readonly type?: string | undefined
  readonly code?: string | undefined
  readonly message?: string | undefined
}

const QUOTA = /insufficient_quota|billing|spend_limit|quota/i
const CONTENT_POLICY = /content_policy|content_filter|content management policy|safety system|flagged/i
const ORG_VERIFICATION = /verif(y|ied|ication)/i
const OVERLOADED = /overload/i

const decoder = new TextDecoder()
/** An upstream's error type worth logging: a short identifier, never free text. */
const IDENTIFIER = /^[A-Za-z0-9_.:-]{1,64}$/

/** A code from an error's `details`: Azure's `{error_code}`, or Google's `[{reason}]` (`API_KEY_INVALID`). */
const detailCode = (details: unknown): string | undefined => {
  if (Array.isArray(details)) {
    for (const detail of details) {
      const reason = typeof detail === "object" && detail !== null ? (detail as { reason?: unknown }).reason : undefined
      if (typeof reason === "string") return reason
    }
    return undefined
  }
  const code = typeof details === "object" && details !== null ? (details as { error_code?: unknown }).error_code : undefined
  return typeof code === "string" ? code : undefined
}

/**
 * Reads `error.type`, `error.code` and `error.message` from an upstream error
 * body of any family (OpenAI `{error:{…}}`, Anthropic `{type:"error",error:{…}}`,
 * Google `{error:{code, message, status}}`).
 * Returns undefined for an empty, non-JSON or unrecognized body.
 */
export const parseErrorDetails = (body: Uint8Array | undefined): UpstreamErrorDetails | undefined => {
  if (body === undefined || body.byteLength === 0) return undefined
  let json: unknown
  try {
    json = JSON.parse(decoder.decode(body))
  } catch {
    return undefined
  }
  if (typeof json !== "object" || json === null) return undefined
  const error = (json as { error?: unknown }).error
  if (typeof error === "object" && error !== null) {
    const e = error as { type?: unknown; code?: unknown; message?: unknown; status?: unknown; details?: unknown }
    if (typeof e.message !== "string") return undefined
    // Google's `{code: 429, message, status: "RESOURCE_EXHAUSTED"}`: the status name is the type.
    const type = typeof e.type === "string" ? e.type : typeof e.status === "string" ? e.status : undefined
    const code = typeof e.code === "string" ? e.code : detailCode(e.details)
    return { type, code, message: e.message }
  }
  // Some OpenAI-compatible servers answer `{"error":"text"}` or `{"message":"text"}`; so does AWS (`{"message"}`).
  if (typeof error === "string") return { message: error }
  const message = (json as { message?: unknown; Message?: unknown }).message ?? (json as { Message?: unknown }).Message
  if (typeof message === "string") return { message }
  return undefined
}

/**
 * AWS exceptions by name (Bedrock's `x-amzn-errortype`, and its stream's
 * `:exception-type`, lower camel case): what they mean whatever the status.
 */
const AWS_ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = {
  ThrottlingException: "rate_limit",
  throttlingException: "rate_limit",
  ServiceUnavailableException: "overloaded",
  serviceUnavailableException: "overloaded",
  ModelNotReadyException: "overloaded",
  modelNotReadyException: "overloaded",
  AccessDeniedException: "forbidden",
  accessDeniedException: "forbidden",
  ValidationException: "bad_request",
  validationException: "bad_request",
  ResourceNotFoundException: "model_not_found",
  resourceNotFoundException: "model_not_found",
  ServiceQuotaExceededException: "quota",
  serviceQuotaExceededException: "quota",
  UnrecognizedClientException: "auth",
  InternalServerException: "upstream",
  internalServerException: "upstream",
  ModelStreamErrorException: "upstream",
  modelStreamErrorException: "upstream",
  ModelTimeoutException: "upstream",
  modelTimeoutException: "upstream"
}

/**
 * Google's canonical status names (`error.status` of Gemini, Vertex AI, and Vertex's
 * rawPredict for Claude, whose errors are Google's, not Anthropic's): what they mean
 * whatever the HTTP status. `INVALID_ARGUMENT` and its kin are left to the status
 * rules, which look for a content-policy marker and Google's `API_KEY_INVALID`.
 */
const GOOGLE_STATUS_CLASSES: Readonly<Record<string, ErrorClass>> = {
  RESOURCE_EXHAUSTED: "rate_limit",
  UNAVAILABLE: "overloaded",
  UNAUTHENTICATED: "auth",
  PERMISSION_DENIED: "forbidden",
  NOT_FOUND: "model_not_found",
  INTERNAL: "upstream",
  UNKNOWN: "upstream",
  DEADLINE_EXCEEDED: "upstream"
}

/**
 * Classifies an upstream HTTP error by status and, where the status alone is
 * ambiguous (429, 403, 400, 503), by the body's type, code and message.
 * The result is the same whichever provider or surface the error came from.
 */
export const classifyUpstream = (status: number, details: UpstreamErrorDetails): ErrorClass => {
  const type = details.type ?? ""
  const code = details.code ?? ""
  const aws = Object.hasOwn(AWS_ERROR_CLASSES, type) ? type : Object.hasOwn(AWS_ERROR_CLASSES, code) ? code : undefined
  if (aws !== undefined) return AWS_ERROR_CLASSES[aws]
  if (Object.hasOwn(GOOGLE_STATUS_CLASSES, type)) return GOOGLE_STATUS_CLASSES[type]
  const marker = `${type} ${code}`
  if (status === 529 || type === "overloaded_error") return "overloaded"
  // Google answers a wrong API key 400 (`API_KEY_INVALID`), not 401.
  if (status === 401 || (status === 400 && code === "API_KEY_INVALID")) return "auth"
  if (status === 402) return "quota"
  if (status === 403) {
    if (ORG_VERIFICATION.test(marker) || ORG_VERIFICATION.test(details.message ?? "")) {
      return "org_verification_required"
    }
    return "forbidden"
  }
  if (status === 404) return "model_not_found"
  if (status === 429) return QUOTA.test(marker) ? "quota" : "rate_limit"
  if (status >= 500) {
    if (status === 503 && (OVERLOADED.test(marker) || OVERLOADED.test(details.message ?? ""))) return "overloaded"
    return "upstream"
  }
  if (status >= 400) {
    if (CONTENT_POLICY.test(marker)) return "content_policy"
    if (QUOTA.test(marker)) return "quota"
    return "bad_request"
  }
  return "upstream"
}

/** Classification of an error an upstream reported inside a stream, whichever family sent it. */
export const classifyStreamError = (error: StreamError): ErrorClass =>
  classifyUpstream(error.status ?? 500, { type: error.type, code: error.code, message: error.message })

/**
 * The status the caller sees for an upstream error (docs/reference/gateway-spec.md §7.1): 4xx verbatim,
 * overload 529, other 5xx 502, a timeout 504.
 */
export const callerStatusOf = (reason: ErrorClass, upstreamStatus: number, timedOut: boolean): number => {
  if (timedOut) return 504
  if (reason === "overloaded") return 529
  if (reason === "upstream") return 502
  if (upstreamStatus >= 400 && upstreamStatus < 500) return upstreamStatus
  return 502
}

/**
 * A failed attempt at an upstream provider. `body` is the raw upstream error
 * body (kept for same-family verbatim forwarding and the trace, never logged).
 */
export class UpstreamError extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
  reason: Schema.Literals(ERROR_CLASSES),
  /** Upstream HTTP status; 0 for a network failure or a timeout. */
  upstreamStatus: Schema.Number,
  /** Provider id the attempt went to (`x-gw-upstream-provider`). */
  provider: Schema.String,
  /** Wire family of that provider: decides verbatim vs translated bodies. */
  family: Schema.Literals(["openai", "anthropic", "gemini", "bedrock", "other"]),
  message: Schema.String,
  timedOut: Schema.Boolean,
  /** Whether the request reached the upstream (false for a refused connection). */
  reached: Schema.Boolean,
  /** The wait the upstream asked for (`Retry-After` or `retry-after-ms`), in milliseconds, when it sent one. */
  retryAfterMs: Schema.optional(Schema.Number),
  body: Schema.optional(Schema.Uint8Array),
  contentType: Schema.optional(Schema.String),
  /** Reported inside an answer the upstream sent with 200 (a stream's error event, a safety block): `upstreamStatus` is the status the error stands for. */
  inStream: Schema.optional(Schema.Boolean),
  /** A network failure's error code (`ECONNREFUSED`, `UND_ERR_SOCKET`…): what the log says instead of the error's message. */
  networkCode: Schema.optional(Schema.String),
  /** Which wait ran out: for the response head, a gap between two chunks after it, or a stream's first content (`ttft_ms`). */
  timeout: Schema.optional(Schema.Literals(["head", "idle", "first_token"])),
  /** An error response's `error.type` (else `error.code`) when it is a plain identifier: loggable, unlike the body. */
  upstreamType: Schema.optional(Schema.String)
}) {
  get status(): number {
    return callerStatusOf(this.reason, this.upstreamStatus, this.timedOut)
  }

  /** An upstream's HTTP error response, classified from its status and body (docs/reference/gateway-spec.md §7.2). */
  static fromResponse(
    source: FailureSource,
    status: number,
    body: Uint8Array,
    options: {
      readonly retryAfterMs?: number | undefined
      readonly contentType?: string | undefined
      readonly inStream?: boolean | undefined
      /** The error's type when the response names it outside the body (AWS `x-amzn-errortype`). */
      readonly errorType?: string | undefined
    } = {}
  ): UpstreamError {
    const parsed = parseErrorDetails(body)
    const details = options.errorType === undefined || options.errorType === "" ? parsed : { ...parsed, type: options.errorType }
    const upstreamType = details?.type ?? details?.code
    return new UpstreamError({
      reason: classifyUpstream(status, details ?? {}),
      upstreamStatus: status,
      provider: source.providerId,
      family: source.family,
      message: details?.message ?? `provider returned status ${status}`,
      timedOut: false,
      reached: true,
      retryAfterMs: options.retryAfterMs,
      body,
      ...(options.contentType === undefined ? {} : { contentType: options.contentType }),
      ...(options.inStream === true ? { inStream: true } : {}),
      ...(upstreamType !== undefined && IDENTIFIER.test(upstreamType) ? { upstreamType } : {})
    })
  }

  /**
   * A failure of class `upstream`: network (`networkCode`), timeout
   * (`timeout`), a malformed or oversized body. Unless `networkCode` is given,
   * `message` is the gateway's own words, safe to log; a fault has no body.
   */
  static fault(
    source: FailureSource,
    message: string,
    options: {
      readonly status?: number
      readonly timeout?: "head" | "idle" | "first_token"
      readonly reached?: boolean
      readonly networkCode?: string
    } = {}
  ): UpstreamError {
    return new UpstreamError({
      reason: "upstream",
      upstreamStatus: options.status ?? 0,
      provider: source.providerId,
      family: source.family,
      message,
      timedOut: options.timeout !== undefined,
      reached: options.reached ?? true,
      retryAfterMs: undefined,
      ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
      ...(options.networkCode === undefined ? {} : { networkCode: options.networkCode })
    })
  }
}

/** Where a failed attempt went: the provider and its wire family. */
export interface FailureSource {
  readonly providerId: string
  readonly family: ProviderFamily
}

/** Gateway-originated request errors (docs/reference/gateway-spec.md §7.1 rows that never reach a provider). */
export const GATEWAY_ERROR_CODES = [
  "invalid_request",
  "model_not_found",
  "ambiguous_model",
  "unsupported_for_model",
  "unsupported_response_format",
  "pii_detected",
  "blocklist_match",
  "output_guardrail_violation",
  "not_found",
  "method_not_allowed",
  "request_too_large",
  "unsupported_media_type",
  "request_timeout",
  "feature_disabled",
  "auth",
  "forbidden",
  "rate_limit",
  "quota"
] as const

export type GatewayErrorCode = typeof GATEWAY_ERROR_CODES[number]

export class GatewayError extends Schema.TaggedError<GatewayError>()("GatewayError", {
  status: Schema.Number,
  code: Schema.Literals(GATEWAY_ERROR_CODES),
  message: Schema.String,
  param: Schema.optional(Schema.String),
  /**
   * For the errors docs/reference/gateway-spec.md §7.2 classifies although no provider was reached (the
   * platform auth layer's `auth`/`forbidden`, a project's `feature_disabled`):
   * sent as `x-gw-error-code`.
   */
  classification: Schema.optional(Schema.Literals(ERROR_CLASSES))
}) {}

/** Gateway-side routing and infrastructure failures (docs/reference/gateway-spec.md §7.4). */
export const INFRA_ERROR_CODES = [
  "INFRA_UNAVAILABLE",
  "SNAPSHOT_DECRYPT_FAILED",
  "ENVIRONMENT_NOT_FOUND",
  "ROUTING_NOT_CONFIGURED"
] as const

export type InfraErrorCode = typeof INFRA_ERROR_CODES[number]

export class InfraError extends Schema.TaggedError<InfraError>()("InfraError", {
  code: Schema.Literals(INFRA_ERROR_CODES),
  message: Schema.String,
  /** For INFRA_UNAVAILABLE: how long the caller should wait. */
  retryAfterMs: Schema.optional(Schema.Number)
}) {
  get status(): number {
    switch (this.code) {
      case "INFRA_UNAVAILABLE":
      case "SNAPSHOT_DECRYPT_FAILED":
        return 503
      case "ENVIRONMENT_NOT_FOUND":
      case "ROUTING_NOT_CONFIGURED":
        return 404
    }
  }
}

export type AnyGatewayFailure = UpstreamError | GatewayError | InfraError

export type ProviderFamily = ProviderWire | "other"
