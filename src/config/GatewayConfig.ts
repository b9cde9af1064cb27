/**
 * The validated gateway configuration as a service. `layer` reads the TOML
 * file named by `GATEWAY_CONFIG` (or `config/gateway.toml`) once at start;
 * `layerTest` builds it from a literal document through the same validation.
 */
import { Context, Effect, Layer, Result } from "effect"
import { ConfigError, configPath, loadSettings, settingsFromDocument } from "./load.ts"
import type { GatewaySettings } from "./resolved.ts"

type Env = Readonly<Record<string, string | undefined>>

export class GatewayConfig extends Context.Service<GatewayConfig, GatewaySettings>()("gateway/config/GatewayConfig") {
  /** Reads and validates the file once; fails with a `ConfigError` naming file, key and problem. */
  static readonly load = (path?: string, env: Env = process.env): Effect.Effect<GatewaySettings, ConfigError> =>
    Effect.suspend(() => Effect.fromResult(loadSettings(configPath(path, env), env)))

  static readonly layer = (path?: string, env: Env = process.env): Layer.Layer<GatewayConfig, ConfigError> =>
    Layer.effect(GatewayConfig, GatewayConfig.load(path, env))

  /** From a literal document (the parsed TOML shape); throws on an invalid document. */
  static readonly fromDocument = (document: unknown, env: Env = {}): GatewaySettings =>
    Result.getOrThrow(settingsFromDocument(document, env, "<inline>"))

  static readonly layerTest = (document: unknown, env: Env = {}): Layer.Layer<GatewayConfig> =>
    Layer.succeed(GatewayConfig, GatewayConfig.fromDocument(document, env))
}

export { ConfigError }
