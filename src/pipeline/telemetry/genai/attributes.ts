/**
 * Names and values of the GenAI telemetry: the OpenTelemetry GenAI semantic
 * conventions (gen-ai-spans, gen-ai-metrics; development status, latest
 * experimental version) and the gateway's own attributes under `gateway.`.
 * docs/operations.md lists them all for operators.
 */
import type { ProviderKind, StopReason } from "../../../domain/index.ts"

export const GEN_AI = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  requestTemperature: "gen_ai.request.temperature",
  requestMaxTokens: "gen_ai.request.max_tokens",
  requestTopP: "gen_ai.request.top_p",
  requestTopK: "gen_ai.request.top_k",
  requestStopSequences: "gen_ai.request.stop_sequences",
  requestSeed: "gen_ai.request.seed",
  requestFrequencyPenalty: "gen_ai.request.frequency_penalty",
  requestPresencePenalty: "gen_ai.request.presence_penalty",
  requestChoiceCount: "gen_ai.request.choice.count",
  requestStream: "gen_ai.request.stream",
  requestEncodingFormats: "gen_ai.request.encoding_formats",
  embeddingsDimensionCount: "gen_ai.embeddings.dimension.count",
  outputType: "gen_ai.output.type",
  responseModel: "gen_ai.response.model",
  responseId: "gen_ai.response.id",
  responseFinishReasons: "gen_ai.response.finish_reasons",
  responseTimeToFirstChunk: "gen_ai.response.time_to_first_chunk",
  usageInputTokens: "gen_ai.usage.input_tokens",
  usageOutputTokens: "gen_ai.usage.output_tokens",
  usageCacheReadInputTokens: "gen_ai.usage.cache_read.input_tokens",
  usageCacheCreationInputTokens: "gen_ai.usage.cache_creation.input_tokens",
  usageReasoningOutputTokens: "gen_ai.usage.reasoning.output_tokens",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  systemInstructions: "gen_ai.system_instructions",
  tokenType: "gen_ai.token.type"
} as const

export const SERVER_ADDRESS = "server.address"
export const SERVER_PORT = "server.port"
export const ERROR_TYPE = "error.type"

/** The gateway's own attributes on a GenAI span (never on its metrics: they would multiply series). */
export const GATEWAY_GENAI = {
  /** The model string the caller sent (`route::smart`, an alias, `openai::gpt-4o`). */
  requestedModel: "gateway.request.model",
  /** The route that served the request, when the model named one. */
  route: "gateway.route",
  /** The function that served the request, when the model named one. */
  function: "gateway.function",
  /** The experiment variant drawn (also the `x-gw-variant` response header). */
  variant: "gateway.variant",
  /** The configured provider id the answering attempt went to (`openai`, `groq`, `vllm-eu`). */
  providerId: "gateway.provider.id",
  /** How many upstream attempts the request took (retries and fallbacks included). */
  attempts: "gateway.attempts",
  /** USD of the request's attempts at the models' prices (every attempt included). */
  costUsd: "gateway.cost_usd",
  /** `fast` (bytes forwarded) or `normalized` (translated). */
  path: "gateway.path",
  /** The platform project of the request. */
  projectId: "gateway.project.id",
  /** Set when a captured content attribute was cut to fit its 64 KB cap. */
  contentTruncated: "gateway.genai.content_truncated"
} as const

/** `gen_ai.operation.name`: the conventions' values, and the endpoint type for operations they do not name. */
export type GenAiOperation =
  | "chat"
  | "embeddings"
  | "image_generation"
  | "audio_speech"
  | "audio_transcription"
  | "audio_translation"
  | "rerank"

export const METRIC = {
  tokenUsage: "gen_ai.client.token.usage",
  operationDuration: "gen_ai.client.operation.duration",
  timeToFirstToken: "gen_ai.server.time_to_first_token"
} as const

/** Bucket boundaries the conventions prescribe for each histogram. */
export const BUCKETS = {
  tokenUsage: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  operationDuration: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  timeToFirstToken: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]
} as const

const KIND_PROVIDER_NAME: Readonly<Record<ProviderKind, string>> = {
  openai: "openai",
  anthropic: "anthropic",
  azure: "azure.ai.openai",
  cohere: "cohere",
  gemini: "gcp.gemini",
  bedrock: "aws.bedrock",
  vertex: "gcp.vertex_ai"
}

/**
 * OpenAI-compatible services the conventions name: a provider configured under
 * such an id (with `kind = "openai"`) is reported as itself, not as `openai`.
 */
const WELL_KNOWN_IDS: Readonly<Record<string, string>> = {
  groq: "groq",
  deepseek: "deepseek",
  mistral: "mistral_ai",
  mistral_ai: "mistral_ai",
  perplexity: "perplexity",
  xai: "x_ai",
  x_ai: "x_ai",
  watsonx: "ibm.watsonx.ai"
}

/** `gen_ai.provider.name` for a configured provider: the conventions' well-known value of its kind or id. */
export const providerNameOf = (providerId: string, kind: ProviderKind): string =>
  (kind === "openai" ? WELL_KNOWN_IDS[providerId] : undefined) ?? KIND_PROVIDER_NAME[kind]

/** The conventions' finish reasons (`stop`, `length`, `content_filter`, `tool_call`), from the canonical stop reason. */
export const finishReasonOf = (reason: StopReason): string => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "max_tokens":
      return "length"
    case "tool_use":
      return "tool_call"
    case "content_filter":
      return "content_filter"
    case "pause_turn":
      return "pause_turn"
  }
}

const origins = new Map<string, { readonly address: string; readonly port: number }>()

/** `server.address` and `server.port` of a provider origin (`scheme://host:port`), parsed once per origin. */
export const serverOf = (origin: string): { readonly address: string; readonly port: number } | undefined => {
  let server = origins.get(origin)
  if (server === undefined) {
    try {
      const url = new URL(origin)
      const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
      server = { address: url.hostname.replace(/^\[|\]$/g, ""), port }
    } catch {
      return undefined
    }
    // Origins come from the configuration (and tenant snapshots): few, but bound the map anyway.
    if (origins.size >= 1024) origins.clear()
    origins.set(origin, server)
  }
  return server
}
