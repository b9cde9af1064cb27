/**
 * Codecs of the JSON endpoints besides chat (embeddings, count_tokens) for
 * providers whose wire family answers them in a format of its own: the
 * caller's body is re-encoded for the provider and its answer decoded back to
 * the caller's format. A family without an entry is forwarded byte for byte
 * (it speaks the caller's format), so only Gemini has entries.
 */
import { Result } from "effect"
import type { ProviderWire } from "../domain/sdk.ts"
import { decodeAnthropicRequest } from "./anthropic/index.ts"
import type { DecodeFailure } from "./contract.ts"
import { decodeGeminiCountTokens, decodeGeminiEmbeddings, encodeGeminiCountTokens, encodeGeminiEmbeddings } from "./gemini/endpoints.ts"

export type TranslatedEndpoint = "embeddings" | "count_tokens"

export interface EndpointCodec {
  /** The provider's body for the caller's; a failure is the caller's 400 (`param` names the field). */
  readonly encodeRequest: (json: Readonly<Record<string, unknown>>, model: string) => Result.Result<Record<string, unknown>, DecodeFailure>
  /** The caller's answer from the provider's; `request` is the caller's body. */
  readonly decodeResponse: (json: unknown, request: Readonly<Record<string, unknown>>) => Result.Result<Record<string, unknown>, DecodeFailure>
}

export const ENDPOINT_CODECS: Readonly<Partial<Record<ProviderWire | "other", Readonly<Partial<Record<TranslatedEndpoint, EndpointCodec>>>>>> = {
  gemini: {
    embeddings: { encodeRequest: encodeGeminiEmbeddings, decodeResponse: decodeGeminiEmbeddings },
    count_tokens: {
      // count_tokens bodies carry no max_tokens; the Messages decoder wants one.
      encodeRequest: (json, model) => Result.map(decodeAnthropicRequest({ max_tokens: 1, ...json }), (request) => encodeGeminiCountTokens(request, model)),
      decodeResponse: decodeGeminiCountTokens
    }
  }
}

/** The codec of `operation` for a provider of `family`, or undefined (forwarded as it is). */
export const endpointCodec = (operation: string, family: ProviderWire | "other"): EndpointCodec | undefined =>
  operation === "embeddings" || operation === "count_tokens" ? ENDPOINT_CODECS[family]?.[operation] : undefined
