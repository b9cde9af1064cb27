/**
 * SDK formats a caller may speak (header `x-genai-sdk`), and the two chat wire
 * families they map to. `azure` clients speak the completions wire.
 */
export type SdkFormat = "openai" | "anthropic" | "azure"

export const SDK_FORMATS: ReadonlyArray<SdkFormat> = ["openai", "anthropic", "azure"]

export const isSdkFormat = (value: string): value is SdkFormat => (SDK_FORMATS as ReadonlyArray<string>).includes(value)

/** The chat wire family: completions-style (`openai`) or messages-style (`anthropic`). */
export type WireFamily = "openai" | "anthropic"

/**
 * A chat wire family a provider may speak: the two a caller may speak too, and
 * the provider-only ones (Gemini's `generateContent`, Bedrock's Converse), reached only by translation.
 */
export type ProviderWire = WireFamily | "gemini" | "bedrock"

/** What a chat client speaks: the two chat wire families, or the OpenAI Responses API. */
export type CallerFormat = WireFamily | "responses"

export const familyOfSdk = (sdk: SdkFormat): WireFamily => (sdk === "anthropic" ? "anthropic" : "openai")
