/**
 * Provider adapters: for each configured provider, what is compiled once at
 * start (origin, base path, auth headers with the credential, API version)
 * and the per-operation URL and auth it adds to each request.
 *
 * Kinds differ only in data here: the URL layout (`openai`-style
 * `{base}/chat/completions`, Azure deployments, Anthropic `/v1/messages`,
 * Gemini `/v1beta/models/{model}:generateContent` (`:streamGenerateContent?alt=sse`),
 * Bedrock `/model/{model}/converse` (`/converse-stream`), Vertex AI
 * `/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`,
 * Cohere `/v2/rerank`, passthrough `{base}{rest}`) and the auth form (bearer, key header, query parameter,
 * or SigV4: the request carries a signer instead of headers, called by the transport over the body;
 * Vertex with `credentials_file` carries a hook of the same kind that adds a cached Google OAuth bearer;
 * Claude on Vertex, `publisher = "anthropic"`, goes to `…/publishers/anthropic/models/{model}:rawPredict`
 * (`:streamRawPredict`) with a hook that moves the version into the body).
 */
import { Redacted } from "effect"
import type { FingerprintedCredential, ResolvedCredential, ResolvedProvider } from "../config/index.ts"
import { UpstreamError } from "../domain/index.ts"
import type { AuthType, ProviderFamily, ProviderKind } from "../domain/index.ts"
import { loadEventStreamCodec } from "./framing.ts"
import { googleBearer } from "./google-auth.ts"
import { vertexAnthropicHook } from "./vertex-anthropic.ts"
import { sigv4Signer } from "./sigv4.ts"
import type { SignRequest } from "./sigv4.ts"

export type Operation =
  | "chat"
  /** A streamed chat request: the `chat` path, except for kinds with a streaming URL of their own (Gemini). */
  | "chat_stream"
  /** The OpenAI Responses API, for providers that serve it (`responsesApi`). */
  | "responses"
  | "embeddings"
  | "image_generation"
  | "audio_speech"
  | "audio_transcription"
  | "audio_translation"
  | "rerank"
  | "count_tokens"
  | "files"
  /** Native passthrough: `suffix` is the caller's path rest, appended to the base URL's path. */
  | "passthrough"

/** The Anthropic API version the gateway speaks when the caller did not choose one. */
export const ANTHROPIC_VERSION = "2023-06-01"

const OPENAI_PATHS: Record<Operation, string> = {
  chat: "/chat/completions",
  chat_stream: "/chat/completions",
  responses: "/responses",
  embeddings: "/embeddings",
  image_generation: "/images/generations",
  audio_speech: "/audio/speech",
  audio_transcription: "/audio/transcriptions",
  audio_translation: "/audio/translations",
  rerank: "/rerank",
  count_tokens: "",
  files: "/files",
  passthrough: ""
}

/** Gemini's method per operation (`models/{model}:method`); operations it does not serve never get here (capabilities). */
const GEMINI_METHODS: Partial<Record<Operation, string>> = {
  chat: ":generateContent",
  chat_stream: ":streamGenerateContent?alt=sse",
  embeddings: ":batchEmbedContents",
  count_tokens: ":countTokens"
}

/** Where one request goes and how it authenticates; `secret` is the key it carries (to mask if an upstream echoes it). */
export interface ProviderRequest {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly secret: Redacted.Redacted<string> | undefined
  /** SigV4 providers: signs the request once its body is known (the transport calls it). */
  readonly sign?: SignRequest | undefined
}

/** Vertex's methods for Claude (Anthropic Messages bodies). */
const RAW_PREDICT_METHODS: Partial<Record<Operation, string>> = {
  chat: ":rawPredict",
  chat_stream: ":streamRawPredict"
}

/** Bedrock's Converse method per operation (`/model/{model}/method`). */
const BEDROCK_METHODS: Partial<Record<Operation, string>> = {
  chat: "/converse",
  chat_stream: "/converse-stream"
}

export interface CompiledProvider {
  readonly id: string
  readonly kind: ProviderKind
  readonly family: ProviderFamily
  /** `scheme://host:port` for the connection pool. */
  readonly origin: string
  readonly models: ReadonlySet<string>
  readonly timeoutMs?: number | undefined
  /** Chat Completions field of a translated request's output limit. */
  readonly maxTokensParam: "max_tokens" | "max_completion_tokens"
  /** Serves the Responses API: a Responses caller's bytes go to its `/responses` unchanged. */
  readonly responsesApi: boolean
  /**
   * Set when the provider needs a key and its variable is unset: what a caller that
   * brings no key of its own is told (`unauthenticatedCall`).
   */
  readonly missingCredential: string | undefined
  /** The configured credential a request without the caller's own key carries, fingerprinted at load. */
  readonly credential: FingerprintedCredential
  /**
   * Path (with query) and auth headers of one request. `key` is the caller's
   * own key (sent in this provider's auth form); without it the configured
   * credential is used, precomputed at start. No key at all → no auth (a
   * `credential = "none"` server; otherwise `unauthenticatedCall` refuses it).
   * `suffix` extends the path (`/file-1/content`).
   */
  readonly request: (
    operation: Operation,
    model: string,
    key?: Redacted.Redacted<string> | undefined,
    suffix?: string
  ) => ProviderRequest
}

const authFor = (
  authType: AuthType,
  authName: string,
  kind: ProviderKind,
  key: Redacted.Redacted<string> | undefined
): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (kind === "anthropic") headers["anthropic-version"] = ANTHROPIC_VERSION
  if (key === undefined || authType === "query_param" || authType === "sigv4") return headers
  const value = Redacted.value(key)
  if (authType === "bearer") headers.authorization = `Bearer ${value}`
  else headers[authName.toLowerCase()] = value
  return headers
}

/** `path` with `query` (no leading `?`) appended, whether or not it has a query already. */
export const withQuery = (path: string, query: string): string =>
  query === "" ? path : `${path}${path.includes("?") ? "&" : "?"}${query}`

/**
 * What a caller without a key is told when the provider's variable is unset: the variable to
 * set, and `credential = "none"` for a server that needs no key (docs/reference/DESIGN.md "Providers").
 */
const missingCredentialMessage = (provider: ResolvedProvider, credential: ResolvedCredential): string | undefined => {
  const { location } = credential
  if (location.kind !== "env" || credential.value !== undefined) return undefined
  return `provider "${provider.id}" has no credential: set ${location.variable} in the gateway's environment, ` +
    `send your own provider key with the request, or set credential = "none" in [providers.${provider.id}] for a server that needs no key`
}

/**
 * A call about to go out without any credential to a provider that needs one: refused
 * before anything is sent, as the 401 `auth` the upstream would have answered, but
 * saying what to set. Undefined when the call may go.
 */
export const unauthenticatedCall = (provider: CompiledProvider, request: ProviderRequest): UpstreamError | undefined =>
  request.secret === undefined && provider.missingCredential !== undefined
    ? new UpstreamError({
      reason: "auth",
      upstreamStatus: 401,
      provider: provider.id,
      family: provider.family,
      message: provider.missingCredential,
      timedOut: false,
      reached: false,
      retryAfterMs: undefined
    })
    : undefined

const EMPTY_HEADERS: Readonly<Record<string, string>> = Object.freeze({})

/** What every compiled provider has whatever its auth. */
const compiledBase = (provider: ResolvedProvider, origin: string, credential: ResolvedCredential) => ({
  id: provider.id,
  kind: provider.kind,
  family: provider.family,
  origin,
  models: new Set(provider.models),
  timeoutMs: provider.timeoutMs,
  maxTokensParam: provider.maxTokensParam,
  responsesApi: provider.responsesApi,
  credential
})

export const compileProvider = (provider: ResolvedProvider, credential?: ResolvedCredential): CompiledProvider => {
  const url = new URL(provider.baseUrl)
  const origin = url.origin
  const basePath = url.pathname === "/" ? "" : url.pathname.replace(/\/+$/, "")
  const used = credential ?? provider.credential
  const configured = used.value
  const configuredHeaders = Object.freeze(authFor(provider.authType, provider.authName, provider.kind, configured))
  const queryFor = (key: Redacted.Redacted<string> | undefined) =>
    provider.authType === "query_param" && key !== undefined
      ? `${encodeURIComponent(provider.authName)}=${encodeURIComponent(Redacted.value(key))}`
      : ""
  const configuredQuery = queryFor(configured)
  const azureVersion = `api-version=${encodeURIComponent(provider.apiVersion)}`
  const vertexModels = provider.vertex === undefined
    ? ""
    : `/v1/projects/${encodeURIComponent(provider.vertex.project)}/locations/${encodeURIComponent(provider.vertex.location)}/publishers/${provider.vertex.publisher}/models`
  const vertexMethods = provider.vertex?.publisher === "anthropic" ? RAW_PREDICT_METHODS : GEMINI_METHODS

  const path = (operation: Operation, model: string, suffix = ""): string => {
    if (operation === "passthrough") return `${basePath}${suffix}`
    switch (provider.kind) {
      case "anthropic":
        return `${basePath}/v1/messages${operation === "count_tokens" ? "/count_tokens" : ""}`
      case "cohere":
        return `${basePath}/v2/rerank`
      case "bedrock":
        return `${basePath}/model/${encodeURIComponent(model)}${BEDROCK_METHODS[operation] ?? ""}`
      case "gemini":
        return `${basePath}/v1beta/models/${encodeURIComponent(model)}${GEMINI_METHODS[operation]}`
      case "vertex":
        return `${basePath}${vertexModels}/${encodeURIComponent(model)}${vertexMethods[operation]}`
      case "azure":
        // Files and the Responses API are not per deployment: the model is named in the body.
        if (operation === "files") return `${basePath}/openai/files${suffix}?${azureVersion}`
        if (operation === "responses") return `${basePath}/openai/responses${suffix}?${azureVersion}`
        return `${basePath}/openai/deployments/${encodeURIComponent(model)}${OPENAI_PATHS[operation]}?${azureVersion}`
      default:
        return `${basePath}${OPENAI_PATHS[operation]}${suffix}`
    }
  }

  // Bedrock streams in Amazon's binary event stream: its decoder is loaded now, only where it is needed.
  if (provider.family === "bedrock") void loadEventStreamCodec()
  const sigv4 = provider.sigv4
  if (sigv4 !== undefined) {
    // SigV4: no static auth headers; a caller's own key is not an AWS credential, so it is not used.
    const aws = sigv4.credentials
    const sign = aws === undefined ? undefined : sigv4Signer(origin, sigv4.region, aws)
    const request = (operation: Operation, model: string, _key?: Redacted.Redacted<string>, suffix?: string): ProviderRequest => ({
      path: path(operation, model, suffix),
      headers: EMPTY_HEADERS,
      secret: aws?.secretAccessKey,
      sign
    })
    return {
      ...compiledBase(provider, origin, used),
      missingCredential: aws === undefined
        ? `provider "${provider.id}" signs with SigV4 but has no AWS access key id and secret access key (access_key_id, secret_access_key)`
        : undefined,
      request
    }
  }

  // Google credentials: the bearer is added by the hook (tokens are fetched and refreshed there); a caller's own key still goes as given.
  const google = provider.google === undefined ? undefined : googleBearer(provider.google, provider.vertex?.project)
  const plain = (operation: Operation, model: string, key: Redacted.Redacted<string> | undefined, suffix: string | undefined): ProviderRequest =>
    key === undefined
      ? google === undefined
        ? { path: withQuery(path(operation, model, suffix), configuredQuery), headers: configuredHeaders, secret: configured }
        : { path: path(operation, model, suffix), headers: EMPTY_HEADERS, secret: undefined, sign: google }
      : {
        path: withQuery(path(operation, model, suffix), queryFor(key)),
        headers: authFor(provider.authType, provider.authName, provider.kind, key),
        secret: key
      }
  const base = { ...compiledBase(provider, origin, used), missingCredential: google === undefined ? missingCredentialMessage(provider, used) : undefined }
  if (provider.vertex?.publisher !== "anthropic") return { ...base, request: plain }
  // Claude on Vertex: chat bodies pass the hook that fits them to rawPredict (with the bearer's, if any).
  // A caller's own key is its bearer: the hook then adds no Google token over it.
  const rawPredict = vertexAnthropicHook(google)
  const rawPredictOwnKey = vertexAnthropicHook(undefined)
  return {
    ...base,
    request: (operation, model, key, suffix) => {
      const request = plain(operation, model, key, suffix)
      if (operation !== "chat" && operation !== "chat_stream") return request
      return { ...request, sign: key === undefined ? rawPredict : rawPredictOwnKey }
    }
  }
}
