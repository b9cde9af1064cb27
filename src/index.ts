/**
 * The gateway as a library (docs/library.md): build it from a configuration,
 * run requests through the same routing, stages and translation as the
 * server, and replace any stage's layer with your own. Only re-exports.
 */
export { Gateway, GatewayRequestError } from "./library/Gateway.ts"
export type { GatewayShape, RequestOptions } from "./library/Gateway.ts"
export { gatewayLayer, loadGatewaySettings, tenantsFromSnapshots } from "./library/layers.ts"
export type { GatewayOptions, GatewaySource } from "./library/layers.ts"
export type {
  AnthropicMessage,
  AnthropicMessageRequest,
  ChatCompletion,
  ChatCompletionRequest,
  ChatMessage,
  EmbeddingsRequest,
  EmbeddingsResponse,
  JsonObject,
  ResponsesRequest,
  ResponsesResponse,
  StreamEvent
} from "./library/types.ts"
export type { ChatStreamEvent } from "./domain/index.ts"
export { LocalResponseCut } from "./http/local.ts"
export type { LocalRequest, LocalResponse } from "./http/local.ts"
export { ConfigError, GatewayConfig } from "./config/index.ts"
export type { GatewaySettings } from "./config/index.ts"
export { StartError } from "./http/server.ts"
export { ProviderClient } from "./providers/transport.ts"
export type { UpstreamCall } from "./providers/transport.ts"
export { layerTest as scriptedProviders, TestReply } from "./providers/testing.ts"
export { ResponseCache, Telemetry, telemetrySettingsOf } from "./pipeline/index.ts"
export { TelemetryMemory } from "./pipeline/telemetry/memory.ts"
export type { MemoryStore } from "./pipeline/index.ts"
