/**
 * Which request parameters an experiment variant may override, per endpoint
 * type (docs/reference/gateway-spec.md §2.7). Protected names can never be set; names outside the
 * allowlist pass through with a startup warning.
 */
import type { EndpointType } from "./schema.ts"

export const PROTECTED_PARAMETERS: ReadonlySet<string> = new Set(["model", "messages", "input", "file", "prompt", "stream"])

/** Keys of a variant table that are the variant's own, not parameters. */
export const VARIANT_OWN_KEYS: ReadonlySet<string> = new Set(["model", "target", "weight"])

export const VARIANT_PARAMETER_ALLOWLIST: Readonly<Record<EndpointType, ReadonlySet<string>>> = {
  chat: new Set([
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "stop_sequences",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "n",
    "response_format",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "service_tier",
    "user",
    "metadata",
    "thinking",
    "system"
  ]),
  embeddings: new Set(["dimensions", "encoding_format", "user"]),
  audio_speech: new Set(["voice", "response_format", "speed", "instructions"]),
  audio_transcription: new Set(["language", "response_format", "temperature", "timestamp_granularities"]),
  image_generation: new Set(["n", "size", "quality", "style", "response_format", "background", "output_format", "user"])
}

/** The parameter overrides of a variant table (its keys minus model/target/weight). */
export const variantParameters = (variant: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const parameters: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(variant)) {
    if (!VARIANT_OWN_KEYS.has(key)) parameters[key] = value
  }
  return parameters
}
