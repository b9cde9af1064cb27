/**
 * The validated configuration in the shape the rest of the gateway uses:
 * providers with their kind, family, normalized URL, auth and credential
 * resolved; targets bound to a provider. Built once at start (or per tenant
 * snapshot) by `load.ts`.
 */
import type { Redacted } from "effect"
import type { AuthType, ProviderFamily, ProviderKind } from "../domain/index.ts"
import { availableParallelism } from "node:os"
import type { FingerprintedCredential, ResolvedCredential } from "./credentials.ts"
import type { CallerLimits, ConfigFile } from "./schema.ts"

export interface ResolvedProvider {
  readonly id: string
  readonly kind: ProviderKind
  readonly family: ProviderFamily
  /** Without a trailing slash. */
  readonly baseUrl: string
  readonly models: ReadonlyArray<string>
  readonly credential: ResolvedCredential
  readonly authType: AuthType
  /** Header or query parameter name for non-bearer auth. */
  readonly authName: string
  readonly timeoutMs?: number | undefined
  /** `ttft_ms`: how long a streamed attempt may go without content. */
  readonly ttftMs?: number | undefined
  /** Azure `api-version`. */
  readonly apiVersion: string
  /** Chat Completions field of a translated request's output limit. */
  readonly maxTokensParam: "max_tokens" | "max_completion_tokens"
  /** Serves the Responses API natively (`/responses`). */
  readonly responsesApi: boolean
  /** Vertex AI: where its models are called (`projects/{project}/locations/{location}`). */
  readonly vertex?: { readonly project: string; readonly location: string; readonly publisher: "google" | "anthropic" } | undefined
  /** Vertex AI with `credentials_file`: where its OAuth tokens come from. */
  readonly google?: GoogleCredentials | undefined
  /** SigV4 (`auth_type = "sigv4"`): the region, and the AWS credentials when they are set (aws-credentials.ts). */
  readonly sigv4?: {
    readonly region: string
    readonly credentials: AwsCredentials | undefined
    /** Where each key comes from, for `check-config`. */
    readonly described: Readonly<Record<"access_key_id" | "secret_access_key" | "session_token", string>>
  } | undefined
}

/**
 * Where a Vertex provider's OAuth tokens come from (`credentials_file`): a key file
 * (service account, or any type google-auth-library reads), or application default credentials.
 */
export type GoogleCredentials =
  | { readonly kind: "key_file"; readonly path: string }
  | { readonly kind: "adc" }

/** AWS credentials of a SigV4 provider: from its `env::` locations (default `AWS_ACCESS_KEY_ID`, …), or from a tenant snapshot. */
export interface AwsCredentials {
  readonly accessKeyId: string
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly sessionToken?: Redacted.Redacted<string> | undefined
}

export interface ResolvedTarget {
  readonly id: string
  /** The model name the provider knows (without a `provider::` prefix). */
  readonly model: string
  readonly providerId: string
  /** Overrides the provider's credential when present. */
  readonly credential?: ResolvedCredential | undefined
  readonly weight: number
  readonly timeoutMs?: number | undefined
  readonly ttftMs?: number | undefined
  readonly hedgeAfterMs?: number | undefined
  readonly maxHedges?: number | undefined
  readonly onStreamBreak?: "error" | "continue" | undefined
}

export interface GatewaySettings {
  /** The file the configuration was read from (or "<inline>"). */
  readonly source: string
  readonly file: ConfigFile
  readonly providers: ReadonlyMap<string, ResolvedProvider>
  readonly targets: ReadonlyMap<string, ResolvedTarget>
  /** The gateway keys (`[keys]`): none means the gateway is open. */
  readonly keys: ReadonlyArray<ResolvedKey>
  /** Startup warnings (unknown keys, deprecations, fallbacks), already logged once. */
  readonly warnings: ReadonlyArray<string>
  /** `[server] admin_key`, read from its variable: what `/status` asks for. */
  readonly adminKey?: FingerprintedCredential | undefined
}

/** How many gateway processes `[server] workers` asks for (`"auto"`: one per core). */
export const workerCountOf = (file: ConfigFile): number => (file.server.workers === "auto" ? availableParallelism() : file.server.workers)

/** A gateway key as the gateway holds it: its SHA-256, never the key. */
export interface ResolvedKey {
  readonly name: string
  /** SHA-256 of the key (hex), taken when the configuration loads. */
  readonly digest: string
  readonly projectId: string | undefined
  readonly models: ReadonlyArray<string> | undefined
  readonly routes: ReadonlyArray<string> | undefined
  readonly functions: ReadonlyArray<string> | undefined
  readonly limits: CallerLimits
}

/** The built-in provider timeout when nothing else sets one (docs/reference/gateway-spec.md §2.7, 8). */
export const DEFAULT_TIMEOUT_MS = 30_000

/**
 * The timeout of a call that goes to a provider rather than to a model (file
 * operations, passthrough): the provider's `timeout_ms`, then
 * `[defaults.provider]`, then 30000 ms (docs/reference/gateway-spec.md §2.7 without the model and target
 * steps, which routing adds for model calls).
 */
export const providerTimeoutMs = (settings: GatewaySettings, providerId: string): number =>
  settings.providers.get(providerId)?.timeoutMs ?? settings.file.defaults.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS
