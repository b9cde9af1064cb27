/**
 * The configuration file (docs/reference/gateway-spec.md §2.7) as Effect Schemas: every section, field,
 * default, type, range and enum. Decoding the parsed TOML with `ConfigFile`
 * yields the typed file; cross-section rules live in `checks.ts`.
 *
 * Keys keep their TOML spelling (snake_case) so this file reads like the
 * configuration reference in docs/configuration.md.
 */
import { Effect, Schema, SchemaTransformation } from "effect"
import { PROVIDER_KINDS } from "../domain/provider-kinds.ts"

const withDefault = <S extends Schema.Top>(value: S["Encoded"]) => Schema.withDecodingDefaultKey<S>(Effect.succeed(value))

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
// 0 asks the OS for a free port (tests, sidecars).
const Port = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))
const Ratio = Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))

export const AuthType = Schema.Literals(["bearer", "api_key_header", "query_param", "sigv4"])
export const Strategy = Schema.Literals(["single", "weighted", "fallback"])
export const FunctionStrategy = Schema.Literals(["single", "weighted", "fallback", "experiment"])
export const EndpointType = Schema.Literals(["chat", "embeddings", "audio_speech", "audio_transcription", "image_generation"])
export type EndpointType = typeof EndpointType.Type
export const CacheMode = Schema.Literals(["auto", "always", "never"])
export const LogLevel = Schema.Literals(["trace", "debug", "info", "warn", "error", "fatal", "none"])

export const Server = Schema.Struct({
  host: Schema.String.pipe(withDefault("127.0.0.1")),
  port: Port.pipe(withDefault(4000)),
  /** Largest JSON request body accepted (beyond spec; multipart bodies are streamed). */
  max_body_bytes: PositiveInt.pipe(withDefault(32 * 1024 * 1024)),
  /** Largest multipart upload (files, transcriptions) accepted (beyond spec). */
  max_upload_bytes: PositiveInt.pipe(withDefault(512 * 1024 * 1024)),
  /** Seconds in-flight requests get to finish on SIGTERM/SIGINT. */
  shutdown_grace_secs: NonNegativeInt.pipe(withDefault(30)),
  /** A request body that makes no progress this long gets 408 and the connection is closed (beyond spec). */
  body_idle_timeout_secs: PositiveInt.pipe(withDefault(30)),
  /**
   * A request body slower than this on average, after a head start of
   * body_idle_timeout_secs, gets 408 and the connection is closed; 0 turns the
   * rule off (beyond spec). Far below any real link, far above a dribbling caller.
   */
  body_min_bytes_per_sec: NonNegativeInt.pipe(withDefault(1024)),
  /** Open client connections at most; one more is answered 503 and closed (beyond spec). */
  max_connections: PositiveInt.pipe(withDefault(10_000)),
  /** A request whose headers take longer than this to arrive gets 408 (beyond spec). */
  header_timeout_secs: PositiveInt.pipe(withDefault(60)),
  /** A client connection with no traffic either way this long is closed (beyond spec). */
  client_idle_timeout_secs: PositiveInt.pipe(withDefault(600)),
  /** Gateway processes sharing the port: a number, or "auto" for one per core (beyond spec). */
  workers: Schema.Union([PositiveInt, Schema.Literal("auto")]).pipe(withDefault(1)),
  /** Re-read the file when it changes, as SIGHUP does (beyond spec). */
  watch_config: Schema.Boolean.pipe(withDefault(false)),
  /** `env::VAR`: the key `/status` asks for; unset, only loopback callers may read it (beyond spec). */
  admin_key: Schema.optionalKey(Schema.String)
})

export const ProviderDefaults = Schema.Struct({
  timeout_ms: Schema.optionalKey(PositiveInt),
  /** No content (text, tool-call or reasoning delta) within this many ms of a streamed attempt's start: it fails as a timeout before the commit, so routing retries or fails over (off when unset). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  auth_type: Schema.optionalKey(AuthType)
})

export const Provider = Schema.Struct({
  /** Implied when the table key is a kind name; required otherwise (docs/reference/DESIGN.md). */
  kind: Schema.optionalKey(Schema.Literals(PROVIDER_KINDS)),
  base_url: Schema.optionalKey(Schema.String),
  models: Schema.Array(Schema.String).pipe(withDefault([])),
  credential: Schema.optionalKey(Schema.String),
  timeout_ms: Schema.optionalKey(PositiveInt),
  /** No content (text, tool-call or reasoning delta) within this many ms of a streamed attempt's start: it fails as a timeout before the commit, so routing retries or fails over (off when unset). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  auth_type: Schema.optionalKey(AuthType),
  auth_header_name: Schema.optionalKey(Schema.NonEmptyString),
  /** AWS region of a Bedrock provider (its default `base_url`, and the SigV4 scope); else read from a `bedrock-runtime.<region>.amazonaws.com` URL. */
  region: Schema.optionalKey(Schema.NonEmptyString),
  /**
   * SigV4 (Bedrock): where the AWS keys come from, each an `env::VAR` location (default
   * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); in a snapshot, `{"value": "…"}`.
   */
  access_key_id: Schema.optionalKey(Schema.String),
  secret_access_key: Schema.optionalKey(Schema.String),
  session_token: Schema.optionalKey(Schema.String),
  /** Vertex AI: the Google Cloud project and location its Gemini models are called in (required with `models`). */
  project: Schema.optionalKey(Schema.NonEmptyString),
  location: Schema.optionalKey(Schema.NonEmptyString),
  /**
   * Vertex AI: Google credentials instead of a bearer `credential`: a key file's path (or
   * `env::VAR` holding it), or `"adc"` for application default credentials.
   */
  credentials_file: Schema.optionalKey(Schema.NonEmptyString),
  /** Vertex AI: whose models the provider serves: `google` (Gemini, the default) or `anthropic` (Claude through rawPredict). */
  publisher: Schema.optionalKey(Schema.Literals(["google", "anthropic"])),
  /** Azure data-plane `api-version` (default 2024-10-21). */
  api_version: Schema.optionalKey(Schema.NonEmptyString),
  /**
   * Chat Completions field for a translated request's output limit. Default:
   * `max_completion_tokens` for OpenAI's and Azure's own APIs, `max_tokens` for
   * other OpenAI-compatible servers (checks.ts).
   */
  max_tokens_param: Schema.optionalKey(Schema.Literals(["max_tokens", "max_completion_tokens"])),
  /**
   * Whether the provider serves the OpenAI Responses API (`/responses`): Responses
   * requests then go there byte for byte. Default: true for OpenAI's and Azure's
   * own APIs, false for other servers (checks.ts).
   */
  responses_api: Schema.optionalKey(Schema.Boolean)
})
export type Provider = typeof Provider.Type

const Price = Schema.Number.check(Schema.isGreaterThanOrEqualTo(0))
const PositiveNumber = Schema.Number.check(Schema.isGreaterThan(0))

export const Model = Schema.Struct({
  timeout_ms: Schema.optionalKey(PositiveInt),
  /** No content (text, tool-call or reasoning delta) within this many ms of a streamed attempt's start: it fails as a timeout before the commit, so routing retries or fails over (off when unset). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  /** Default `max_tokens` when a messages-style upstream needs one (beyond spec; else 4096). */
  max_tokens: Schema.optionalKey(PositiveInt),
  /** USD per million input tokens (cost accounting). */
  input_per_mtok: Schema.optionalKey(Price),
  /** USD per million output tokens, reasoning tokens included. */
  output_per_mtok: Schema.optionalKey(Price),
  /** USD per million input tokens read from the provider's prompt cache (default: the input price). */
  cache_read_per_mtok: Schema.optionalKey(Price),
  /** USD per million input tokens written to the provider's prompt cache (default: the input price). */
  cache_write_per_mtok: Schema.optionalKey(Price)
})

/**
 * What one caller (a gateway key, or a tenant project) may spend: every field
 * optional, an absent one is no limit. Counted in the limits store, shared by
 * every gateway on it.
 */
export const LimitFields = {
  requests_per_minute: Schema.optionalKey(PositiveInt),
  /** Input plus output tokens in any 60 s. */
  tokens_per_minute: Schema.optionalKey(PositiveInt),
  /** Requests running at once; one more is refused at once, never queued. */
  concurrent_requests: Schema.optionalKey(PositiveInt),
  /** USD per UTC day. */
  budget_usd_per_day: Schema.optionalKey(PositiveNumber),
  /** USD per UTC calendar month. */
  budget_usd_per_month: Schema.optionalKey(PositiveNumber)
}
export const CallerLimits = Schema.Struct(LimitFields)
export type CallerLimits = typeof CallerLimits.Type

/**
 * A gateway key (`[keys.<name>]`): who may call (`x-gw-authorization: Bearer
 * <key>`), what they may use (globs over `model`, route ids and function
 * names; an absent list allows all), and their limits.
 */
export const GatewayKey = Schema.Struct({
  /** `env::VAR`: the key is read from the environment at start and kept as its SHA-256 only. */
  key: Schema.String,
  project_id: Schema.optionalKey(Schema.NonEmptyString),
  models: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  routes: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  functions: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  ...LimitFields
})
export type GatewayKey = typeof GatewayKey.Type

/** Where the counters of rate limits and budgets live (`[limits]`). */
export const LimitsStore = Schema.Struct({
  /** Redis URL; default: the `[cache]` table's `url`, whether or not the cache is on. */
  url: Schema.optionalKey(Schema.String),
  /** The store unreachable: admit the request (`allow`, logged and counted) or refuse it 503 (`deny`). */
  on_store_error: Schema.Literals(["allow", "deny"]).pipe(withDefault("allow")),
  pool_size: PositiveInt.pipe(withDefault(4)),
  /** A store command that takes longer than this counts as the store unreachable. */
  timeout_ms: PositiveInt.pipe(withDefault(250)),
  /** The output a request without an output limit of its own (`max_tokens`…) is expected to produce, for its reservation. */
  default_output_tokens: PositiveInt.pipe(withDefault(4096))
})

/** What a committed stream that breaks does: `error` (the error frame, the spec's behaviour) or `continue` (on another target). */
export const OnStreamBreak = Schema.Literals(["error", "continue"])
export type OnStreamBreak = typeof OnStreamBreak.Type

export const Target = Schema.Struct({
  model: Schema.NonEmptyString,
  credential: Schema.optionalKey(Schema.String),
  weight: PositiveInt.pipe(withDefault(1)),
  timeout_ms: Schema.optionalKey(PositiveInt),
  /** No content (text, tool-call or reasoning delta) within this many ms of a streamed attempt's start: it fails as a timeout before the commit, so routing retries or fails over (off when unset). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  /** No content (text, tool-call or reasoning delta; a non-streamed answer: no whole answer) within this many ms: the step's next target is started beside this one and the first to answer wins (off when unset). */
  hedge_after_ms: Schema.optionalKey(PositiveInt),
  /** How many hedges a request may start in all (default 1). */
  max_hedges: Schema.optionalKey(PositiveInt),
  /** A committed stream that breaks: end it with the error frame (`error`, the default) or continue the answer on the plan's next target (`continue`). */
  on_stream_break: Schema.optionalKey(OnStreamBreak)
})
export type Target = typeof Target.Type

export const Retry = Schema.Struct({
  max_retries: NonNegativeInt.pipe(withDefault(2)),
  backoff_base_ms: NonNegativeInt.pipe(withDefault(500))
})
export type Retry = typeof Retry.Type

export const Step = Schema.Struct({
  strategy: Strategy,
  targets: Schema.Array(Schema.NonEmptyString),
  /** Applies to each of the step's targets that sets none itself (as do `hedge_after_ms`, `max_hedges` and `on_stream_break`). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  hedge_after_ms: Schema.optionalKey(PositiveInt),
  max_hedges: Schema.optionalKey(PositiveInt),
  /** As `ttft_ms`: applies to each target that does not set it more specifically. */
  on_stream_break: Schema.optionalKey(OnStreamBreak)
})
export type Step = typeof Step.Type

export const Route = Schema.Struct({
  endpoint: EndpointType,
  models: Schema.Array(Schema.NonEmptyString),
  strategy: Strategy,
  targets: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  steps: Schema.optionalKey(Schema.Array(Step)),
  retry: Schema.optionalKey(Retry),
  /** Applies to each of the route's targets that neither it nor its step sets (as do `hedge_after_ms`, `max_hedges` and `on_stream_break`). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  hedge_after_ms: Schema.optionalKey(PositiveInt),
  max_hedges: Schema.optionalKey(PositiveInt),
  /** As `ttft_ms`: applies to each target that does not set it more specifically. */
  on_stream_break: Schema.optionalKey(OnStreamBreak)
})
export type Route = typeof Route.Type

/** A variant's own keys; every other key overrides a request parameter. */
export const Variant = Schema.StructWithRest(
  Schema.Struct({
    model: Schema.optionalKey(Schema.NonEmptyString),
    target: Schema.optionalKey(Schema.NonEmptyString),
    /** An integer (docs/reference/gateway-spec.md §2.7); `> 0` is checked in checks.ts so the message names the value. */
    weight: Schema.Int
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)
export type Variant = typeof Variant.Type

export const FunctionDef = Schema.Struct({
  endpoint: EndpointType,
  strategy: FunctionStrategy,
  models: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  targets: Schema.optionalKey(Schema.Array(Schema.NonEmptyString)),
  steps: Schema.optionalKey(Schema.Array(Step)),
  variants: Schema.optionalKey(Schema.Record(Schema.String, Variant)),
  retry: Schema.optionalKey(Retry),
  /** Applies to each of the function's targets that neither it nor its step sets (as do `hedge_after_ms`, `max_hedges` and `on_stream_break`). */
  ttft_ms: Schema.optionalKey(PositiveInt),
  hedge_after_ms: Schema.optionalKey(PositiveInt),
  max_hedges: Schema.optionalKey(PositiveInt),
  /** As `ttft_ms`: applies to each target that does not set it more specifically. */
  on_stream_break: Schema.optionalKey(OnStreamBreak)
})
export type FunctionDef = typeof FunctionDef.Type

export const CircuitBreaker = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(false)),
  failure_threshold: PositiveInt.pipe(withDefault(5)),
  recovery_timeout_ms: PositiveInt.pipe(withDefault(30000))
})

export const Routing = Schema.Struct({
  retry: Retry.pipe(withDefault({})),
  circuit_breaker: CircuitBreaker.pipe(withDefault({}))
})

export const Security = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(false)),
  blocklist: Schema.Array(Schema.String).pipe(withDefault([])),
  /** Run the scanners on response text too (beyond spec, off by default). */
  output_guardrails: Schema.Boolean.pipe(withDefault(false))
})

export const Telemetry = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(true)),
  otlp_endpoint: Schema.String.pipe(withDefault("http://localhost:4317")),
  service_name: Schema.String.pipe(withDefault("gateway")),
  environment: Schema.String.pipe(withDefault("production")),
  sample_ratio: Ratio.pipe(withDefault(0.1)),
  log_level: LogLevel.pipe(withDefault("info")),
  /** `auto`: one coloured line per request on a terminal, JSON lines otherwise (beyond spec). */
  log_format: Schema.Literals(["auto", "json", "pretty"]).pipe(withDefault("auto")),
  /** How long an ended span waits at most for its batch to leave, both sections' span queues (beyond spec; 1000 when unset; a full batch leaves at once). */
  export_delay_ms: Schema.optionalKey(PositiveInt)
})

/** Prometheus metrics at `GET /metrics`, on the gateway's own address unless `port` is set (beyond spec). */
export const Metrics = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(true)),
  /** With `port`: the address of a listener of its own that serves `/metrics` only. */
  host: Schema.String.pipe(withDefault("127.0.0.1")),
  port: Schema.optionalKey(Port)
})

const GenAiTelemetryFields = {
  enabled: Schema.Boolean.pipe(withDefault(false)),
  otlp_endpoint: Schema.String.pipe(withDefault("http://localhost:4317")),
  service_name: Schema.String.pipe(withDefault("gateway-genai-telemetry")),
  environment: Schema.String.pipe(withDefault("production")),
  sample_ratio: Ratio.pipe(withDefault(1.0)),
  metrics_enabled: Schema.Boolean.pipe(withDefault(true)),
  metrics_export_interval_secs: PositiveInt.pipe(withDefault(30)),
  capture_content: Schema.Boolean.pipe(withDefault(true)),
  otlp_bearer_token: Schema.String.pipe(withDefault(""))
}

/** The export timeout an unset `metrics_export_timeout_secs` means: 10 s, or the interval when that is shorter. */
const DEFAULT_METRICS_EXPORT_TIMEOUT_SECS = 10

/**
 * `metrics_export_timeout_secs` defaults from the interval, so a file that sets
 * only a short interval starts; an explicit timeout above the interval is
 * refused in telemetry-checks.ts.
 */
export const GenAiTelemetry = Schema.Struct({
  ...GenAiTelemetryFields,
  metrics_export_timeout_secs: Schema.optionalKey(PositiveInt)
}).pipe(Schema.decodeTo(
  Schema.Struct({ ...GenAiTelemetryFields, metrics_export_timeout_secs: PositiveInt }).pipe(Schema.toType),
  SchemaTransformation.transform({
    decode: (section) => ({
      ...section,
      metrics_export_timeout_secs: section.metrics_export_timeout_secs ??
        Math.min(DEFAULT_METRICS_EXPORT_TIMEOUT_SECS, section.metrics_export_interval_secs)
    }),
    encode: (section) => section
  })
))

export const Auth = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(false)),
  exchange_url: Schema.optionalKey(Schema.String),
  api_token: Schema.optionalKey(Schema.String),
  project_id: Schema.optionalKey(Schema.String),
  cache_skew_seconds: NonNegativeInt.pipe(withDefault(60)),
  exchange_timeout_ms: PositiveInt.pipe(withDefault(2000))
})

export const TenantRouting = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(false)),
  redis_url: Schema.String.pipe(withDefault("redis://localhost:6379")),
  lru_capacity: PositiveInt.pipe(withDefault(1000)),
  /** Checked in checks.ts: a value <= 0 falls back to 300 with a warning (spec). */
  anti_entropy_interval_secs: Schema.Int.pipe(withDefault(300)),
  api_fallback_url: Schema.optionalKey(Schema.String),
  api_fallback_timeout_ms: PositiveInt.pipe(withDefault(5000)),
  api_fallback_auth_token: Schema.optionalKey(Schema.String),
  lru_idle_timeout_secs: PositiveInt.pipe(withDefault(3600)),
  private_key_path: Schema.optionalKey(Schema.String)
})

export const Cache = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(false)),
  url: Schema.String.pipe(withDefault("redis://localhost:6379")),
  default_mode: CacheMode.pipe(withDefault("auto")),
  ttl_seconds: PositiveInt.pipe(withDefault(604800)),
  max_ttl_seconds: PositiveInt.pipe(withDefault(604800)),
  max_entry_size_bytes: PositiveInt.pipe(withDefault(1048576)),
  pool_size: PositiveInt.pipe(withDefault(8)),
  encrypt: Schema.Boolean.pipe(withDefault(true)),
  encrypt_salt: Schema.String.pipe(withDefault(""))
})

/**
 * The Responses API's state (`[responses]`): stored answers that
 * `previous_response_id`, `item_reference` and `/v1/responses/{id}` read.
 * `url` and `encrypt_salt` default to the `[cache]` table's, whether or not
 * the cache is on (src/config/responses.ts settles them).
 */
export const ResponsesStore = Schema.Struct({
  enabled: Schema.Boolean.pipe(withDefault(false)),
  url: Schema.optionalKey(Schema.String),
  encrypt_salt: Schema.optionalKey(Schema.String),
  /** How long a stored response can be read or chained from (default 30 days). */
  store_ttl_seconds: PositiveInt.pipe(withDefault(2592000)),
  /** A stored response (its input and output items) larger than this is refused with a clear error. */
  max_entry_size_bytes: PositiveInt.pipe(withDefault(4194304)),
  pool_size: PositiveInt.pipe(withDefault(4)),
  /** A store command that takes longer than this counts as the store unreachable. */
  timeout_ms: PositiveInt.pipe(withDefault(1000))
})

export const ConfigFile = Schema.Struct({
  server: Server,
  defaults: Schema.Struct({ provider: ProviderDefaults.pipe(withDefault({})) }).pipe(withDefault({})),
  providers: Schema.Record(Schema.String, Provider).pipe(withDefault({})),
  models: Schema.Record(Schema.String, Model).pipe(withDefault({})),
  targets: Schema.Record(Schema.String, Target).pipe(withDefault({})),
  routes: Schema.Record(Schema.String, Route).pipe(withDefault({})),
  functions: Schema.Record(Schema.String, FunctionDef).pipe(withDefault({})),
  routing: Routing.pipe(withDefault({})),
  security: Security.pipe(withDefault({})),
  telemetry: Telemetry.pipe(withDefault({})),
  genai_telemetry: GenAiTelemetry.pipe(withDefault({})),
  auth: Auth.pipe(withDefault({})),
  tenant_routing: TenantRouting.pipe(withDefault({})),
  cache: Cache.pipe(withDefault({})),
  metrics: Metrics.pipe(withDefault({})),
  keys: Schema.Record(Schema.String, GatewayKey).pipe(withDefault({})),
  limits: LimitsStore.pipe(withDefault({})),
  responses: ResponsesStore.pipe(withDefault({}))
})
export type ConfigFile = typeof ConfigFile.Type

/** The sections of the gateway's own file that a tenant snapshot may not set. */
export const GATEWAY_ONLY_SECTIONS = ["server", "telemetry", "genai_telemetry", "auth", "tenant_routing", "metrics", "keys", "limits"] as const

/** What a project may set of `[responses]` in its snapshot: how long its stored responses live (the store itself is the gateway's). */
export const ProjectResponses = Schema.Struct({
  store_ttl_seconds: Schema.optionalKey(PositiveInt)
})

/**
 * A tenant snapshot (multi-tenant mode, docs/multi-tenant.md): a project's
 * routing sections, with the same schemas as the file, plus its `version`
 * (opaque: any change is a new version; an integer is read as its decimal
 * text) and the endpoint types switched off for the project. Provider and
 * target `credential`s are taken out before decoding (snapshot.ts), so the
 * schema never sees a key.
 */
export const SnapshotFile = Schema.Struct({
  version: Schema.Union([Schema.NonEmptyString.check(Schema.isMaxLength(128)), NonNegativeInt]),
  disabled_endpoints: Schema.Array(EndpointType).pipe(withDefault([])),
  /** The project's own rate limits and budgets, counted across every key and gateway. */
  project_limits: CallerLimits.pipe(withDefault({})),
  /** `store_ttl_seconds` of the project's stored Responses (default: the gateway's). */
  responses: ProjectResponses.pipe(withDefault({})),
  defaults: ConfigFile.fields.defaults,
  providers: ConfigFile.fields.providers,
  models: ConfigFile.fields.models,
  targets: ConfigFile.fields.targets,
  routes: ConfigFile.fields.routes,
  functions: ConfigFile.fields.functions,
  routing: ConfigFile.fields.routing,
  security: ConfigFile.fields.security,
  cache: ConfigFile.fields.cache
})
export type SnapshotFile = typeof SnapshotFile.Type
