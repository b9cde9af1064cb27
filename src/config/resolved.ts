/**
 * The validated configuration in the shape the rest of the gateway uses:
 * providers with their kind, family, normalized URL, auth and credential
 * resolved; targets bound to a provider. Built once at start (or per tenant
 * snapshot) by `load.ts`.
 */
import type { AuthType, ProviderFamily, ProviderKind } from "../domain/index.ts"
import type { ResolvedCredential } from "./credentials.ts"
import type { ConfigFile } from "./schema.ts"

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
  /** Azure `api-version`. */
  readonly apiVersion: string
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
}

export interface GatewaySettings {
  /** The file the configuration was read from (or "<inline>"). */
  readonly source: string
  readonly file: ConfigFile
  readonly providers: ReadonlyMap<string, ResolvedProvider>
  readonly targets: ReadonlyMap<string, ResolvedTarget>
  /** Startup warnings (unknown keys, deprecations, fallbacks), already logged once. */
  readonly warnings: ReadonlyArray<string>
}
