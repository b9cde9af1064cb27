/**
 * The provider kinds the gateway knows, as data (docs/reference/DESIGN.md "Providers"):
 * wire family, default auth, conventional credential variable, default base URL
 * and capabilities. Config validation and the provider adapters both read it,
 * so adding a kind means adding one row here and one adapter.
 */
import type { ProviderFamily } from "./errors.ts"

export const PROVIDER_KINDS = ["openai", "anthropic", "azure", "cohere", "gemini", "bedrock", "vertex"] as const

export type ProviderKind = typeof PROVIDER_KINDS[number]

export const isProviderKind = (value: string): value is ProviderKind =>
  (PROVIDER_KINDS as ReadonlyArray<string>).includes(value)

/** `sigv4`: AWS Signature Version 4 over each request (Bedrock), with the provider's AWS keys (`access_key_id`, …; the environment's by default). */
export type AuthType = "bearer" | "api_key_header" | "query_param" | "sigv4"

/** Endpoint types of routes and functions (docs/reference/gateway-spec.md §2.7) plus the operations without one. */
export type Capability =
  | "chat"
  | "embeddings"
  | "image_generation"
  | "audio_speech"
  | "audio_transcription"
  | "files"
  | "rerank"
  | "count_tokens"
  | "passthrough"

export interface ProviderKindInfo {
  /** The chat wire family this kind speaks (`other` for native-only kinds; `gemini` is reached only by translation). */
  readonly family: ProviderFamily
  readonly defaultBaseUrl: string
  /** Environment variable holding the key when `credential` is omitted. */
  readonly conventionEnv: string
  readonly authType: AuthType
  /** Header (or query parameter) carrying the key for non-bearer auth. */
  readonly authName?: string | undefined
  readonly capabilities: ReadonlySet<Capability>
}

const caps = (...values: ReadonlyArray<Capability>): ReadonlySet<Capability> => new Set(values)

export const PROVIDER_KIND_INFO: Readonly<Record<ProviderKind, ProviderKindInfo>> = {
  openai: {
    family: "openai",
    defaultBaseUrl: "https://api.openai.com/v1",
    conventionEnv: "OPENAI_API_KEY",
    authType: "bearer",
    capabilities: caps("chat", "embeddings", "image_generation", "audio_speech", "audio_transcription", "files", "rerank")
  },
  anthropic: {
    family: "anthropic",
    defaultBaseUrl: "https://api.anthropic.com",
    conventionEnv: "ANTHROPIC_API_KEY",
    authType: "api_key_header",
    authName: "x-api-key",
    capabilities: caps("chat", "count_tokens")
  },
  azure: {
    family: "openai",
    defaultBaseUrl: "",
    conventionEnv: "AZURE_OPENAI_API_KEY",
    authType: "api_key_header",
    authName: "api-key",
    capabilities: caps("chat", "embeddings", "image_generation", "audio_speech", "audio_transcription", "files")
  },
  cohere: {
    family: "other",
    defaultBaseUrl: "https://api.cohere.com",
    conventionEnv: "COHERE_API_KEY",
    authType: "bearer",
    capabilities: caps("rerank", "passthrough")
  },
  gemini: {
    family: "gemini",
    defaultBaseUrl: "https://generativelanguage.googleapis.com",
    conventionEnv: "GEMINI_API_KEY",
    authType: "api_key_header",
    authName: "x-goog-api-key",
    capabilities: caps("chat", "embeddings", "count_tokens", "passthrough")
  },
  bedrock: {
    family: "bedrock",
    defaultBaseUrl: "",
    conventionEnv: "AWS_BEARER_TOKEN_BEDROCK",
    authType: "bearer",
    capabilities: caps("chat", "passthrough")
  },
  vertex: {
    family: "gemini",
    defaultBaseUrl: "",
    conventionEnv: "GOOGLE_ACCESS_TOKEN",
    authType: "bearer",
    capabilities: caps("chat", "passthrough")
  }
}

/** `<ID>_API_KEY`, upper case, non-alphanumerics as `_` (docs/reference/DESIGN.md). */
export const conventionEnvFor = (providerId: string, kind: ProviderKind): string =>
  providerId === kind
    ? PROVIDER_KIND_INFO[kind].conventionEnv
    : `${providerId.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`

/** Default Azure data-plane API version (docs/reference/DESIGN.md). */
export const AZURE_DEFAULT_API_VERSION = "2024-10-21"
