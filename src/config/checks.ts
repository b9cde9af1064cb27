/**
 * Cross-section rules that a schema of one field cannot express (docs/reference/gateway-spec.md §2.7,
 * docs/reference/DESIGN.md "Model resolution"): provider kinds and URLs, credential
 * locations, target and inline models resolving to exactly one provider,
 * route/function shapes, experiment variants, and the fallbacks and
 * deprecations that only warn. Produces the resolved providers and targets.
 */
import { Result } from "effect"
import { AZURE_DEFAULT_API_VERSION, conventionEnvFor, foldCase, isProviderKind, PROVIDER_KIND_INFO } from "../domain/index.ts"
import type { ProviderKind } from "../domain/index.ts"
import { AWS_KEY_FIELDS, sigv4Of } from "./aws-credentials.ts"
import type { AwsKeySource, SnapshotAwsKeys } from "./aws-credentials.ts"
import { NO_CREDENTIAL, parseCredentialLocation, resolveCredential } from "./credentials.ts"
import { closestName, didYouMean } from "./did-you-mean.ts"
import type { FingerprintedCredential, ResolvedCredential } from "./credentials.ts"
import { checkKeys } from "./key-checks.ts"
import { isRedisUrl } from "./redis-url.ts"
import { checkResponses } from "./responses.ts"
import { modelPrice } from "./prices.ts"
import type { GoogleCredentials, ResolvedKey, ResolvedProvider, ResolvedTarget } from "./resolved.ts"
import type { ConfigFile, FunctionDef, Route, Step } from "./schema.ts"
import { checkTelemetrySections } from "./telemetry-checks.ts"
import { PROTECTED_PARAMETERS, VARIANT_PARAMETER_ALLOWLIST, variantParameters } from "./variant-params.ts"

type Env = Readonly<Record<string, string | undefined>>

/**
 * Where credentials come from: the gateway's own file reads `env::VAR`
 * locations and convention variables from its environment; a tenant snapshot
 * carries its keys itself and must never reach the host's environment, so its
 * credentials are extracted before these checks and handed in resolved.
 */
export type CredentialSource =
  | { readonly kind: "environment"; readonly env: Env }
  | {
    readonly kind: "snapshot"
    /** A provider absent here has no credential (callers bring their own key). */
    readonly providers: ReadonlyMap<string, ResolvedCredential>
    /** A target absent here uses its provider's credential. */
    readonly targets: ReadonlyMap<string, ResolvedCredential>
    /** The AWS keys of SigV4 providers (`access_key_id`, …), by provider id. */
    readonly aws?: ReadonlyMap<string, SnapshotAwsKeys> | undefined
  }

/** Where a SigV4 provider's AWS keys come from: its own `env::` locations and the environment, or the snapshot. */
const awsKeySourceOf = (id: string, provider: ConfigFile["providers"][string], source: CredentialSource): AwsKeySource =>
  source.kind === "snapshot"
    ? { kind: "snapshot", keys: source.aws?.get(id) }
    : {
      kind: "environment",
      env: source.env,
      locations: Object.fromEntries(AWS_KEY_FIELDS.flatMap((field) => (provider[field] === undefined ? [] : [[field, provider[field]]])))
    }

export interface CheckResult {
  readonly errors: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<string>
  readonly providers: ReadonlyMap<string, ResolvedProvider>
  readonly targets: ReadonlyMap<string, ResolvedTarget>
  /** The gateway keys (none for a snapshot: keys are the gateway's own). */
  readonly keys: ReadonlyArray<ResolvedKey>
  /** `tenant_routing.anti_entropy_interval_secs` after the spec's fallback. */
  readonly antiEntropyIntervalSecs: number
  /** `[server] admin_key` read from its variable; undefined when unset. */
  readonly adminKey: FingerprintedCredential | undefined
}

/** `[server] admin_key`: an `env::VAR` naming a variable that is set (a key nobody can send would lock `/status`). */
const checkAdminKey = (file: ConfigFile, credentials: CredentialSource, findings: Findings): FingerprintedCredential | undefined => {
  const value = file.server.admin_key
  if (value === undefined || credentials.kind !== "environment") return undefined
  const location = parseCredentialLocation(value)
  if (location?.kind !== "env") {
    findings.error("server.admin_key", `expected "env::VARIABLE" (the key is never written in the file), got "${value.startsWith("env::") ? value : "(a literal value, not shown)"}"`)
    return undefined
  }
  const resolved = resolveCredential(location, credentials.env)
  if (resolved.value === undefined) findings.error("server.admin_key", `environment variable ${location.variable} is not set`)
  return resolved.value === undefined ? undefined : resolved
}

class Findings {
  readonly errors: Array<string> = []
  readonly warnings: Array<string> = []
  error(path: string, message: string): void {
    this.errors.push(`${path}: ${message}`)
  }
  warn(path: string, message: string): void {
    this.warnings.push(`${path}: ${message}`)
  }
}

const normalizeBaseUrl = (value: string): string | undefined => {
  try {
    const url = new URL(value)
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
    return value.replace(/\/+$/, "")
  } catch {
    return undefined
  }
}

const credentialAt = (
  path: string,
  value: string,
  env: Env,
  findings: Findings
): ResolvedCredential | undefined => {
  const location = parseCredentialLocation(value)
  if (location === undefined) {
    findings.error(path, `expected "env::<VARIABLE>" or "none", got ${JSON.stringify(value.startsWith("env::") ? value : "<redacted literal>")} (keys never belong in the file)`)
    return undefined
  }
  return resolveCredential(location, env)
}

/**
 * OpenAI's own API (the `openai` provider, or any at api.openai.com) and Azure
 * OpenAI: they take `max_completion_tokens` (their reasoning models refuse
 * `max_tokens`) and serve the Responses API. Other OpenAI-compatible servers
 * are not assumed to do either.
 */
const isOfficialOpenAi = (id: string, kind: ProviderKind, baseUrl: string): boolean =>
  kind === "azure" || (kind === "openai" && (id === "openai" || new URL(baseUrl).hostname === "api.openai.com"))

/** The URL a provider's own settings give it: Bedrock's from its region, Vertex's from its location. */
const defaultUrlOf = (kind: ProviderKind, provider: ConfigFile["providers"][string]): string | undefined => {
  if (kind === "bedrock" && provider.region !== undefined) return `https://bedrock-runtime.${provider.region}.amazonaws.com`
  if (kind === "vertex" && provider.location !== undefined) {
    return provider.location === "global" ? "https://aiplatform.googleapis.com" : `https://${provider.location}-aiplatform.googleapis.com`
  }
  return undefined
}

/** Vertex's project and location; a Vertex provider that serves models needs both. Undefined after an error, or for a passthrough-only one. */
const vertexOf = (path: string, provider: ConfigFile["providers"][string], findings: Findings): ResolvedProvider["vertex"] | null => {
  const { project, location } = provider
  if (project !== undefined && location !== undefined) return { project, location, publisher: provider.publisher ?? "google" }
  if (provider.models.length === 0) return undefined
  findings.error(`${path}.${project === undefined ? "project" : "location"}`, `required for a Vertex AI provider that serves models (its URLs are projects/{project}/locations/{location}/…)`)
  return null
}

/**
 * Google credentials of a Vertex provider (`credentials_file`): a path, `env::VAR` naming a
 * set variable that holds one, or `"adc"` (application default credentials: the file of
 * `GOOGLE_APPLICATION_CREDENTIALS` when set, else what google-auth-library finds). Null after an error.
 */
const googleOf = (path: string, kind: ProviderKind, value: string, source: CredentialSource, findings: Findings): GoogleCredentials | null => {
  const field = `${path}.credentials_file`
  if (kind !== "vertex") {
    findings.error(field, `Google credentials are for kind "vertex" only, not "${kind}"`)
    return null
  }
  const env = source.kind === "snapshot" ? {} : source.env
  if (value === "adc") {
    const file = env.GOOGLE_APPLICATION_CREDENTIALS
    return file === undefined || file === "" ? { kind: "adc" } : { kind: "key_file", path: file }
  }
  const location = value.startsWith("env::") ? parseCredentialLocation(value) : undefined
  if (location?.kind !== "env") return { kind: "key_file", path: value }
  const file = env[location.variable]
  if (file === undefined || file === "") {
    findings.error(field, `${location.variable} is not set (it should hold the key file's path)`)
    return null
  }
  return { kind: "key_file", path: file }
}

const checkProviders = (file: ConfigFile, source: CredentialSource, findings: Findings): Map<string, ResolvedProvider> => {
  const providers = new Map<string, ResolvedProvider>()
  for (const [id, provider] of Object.entries(file.providers)) {
    const path = `providers.${id}`
    let kind: ProviderKind
    if (provider.kind !== undefined) {
      kind = provider.kind
    } else if (isProviderKind(id)) {
      kind = id
    } else {
      findings.error(`${path}.kind`, `provider "${id}" is not a known kind; set kind = "openai" (any OpenAI-compatible server) or one of ${Object.keys(PROVIDER_KIND_INFO).join(", ")}`)
      continue
    }
    if (id.includes("::")) findings.error(path, `provider ids cannot contain "::"`)
    const info = PROVIDER_KIND_INFO[kind]
    if (provider.base_url === undefined && id !== kind) {
      // A custom id (groq, vllm…) must say where it lives: never default it to the kind's vendor.
      findings.error(`${path}.base_url`, `required for provider "${id}" (only a provider named after its kind has a default URL)`)
      continue
    }
    const rawUrl = provider.base_url ?? defaultUrlOf(kind, provider) ?? info.defaultBaseUrl
    if (rawUrl === "") {
      findings.error(`${path}.base_url`, `required for kind "${kind}"`)
      continue
    }
    const baseUrl = normalizeBaseUrl(rawUrl)
    if (baseUrl === undefined) {
      findings.error(`${path}.base_url`, `expected an http(s) URL, got ${JSON.stringify(rawUrl)}`)
      continue
    }
    const credential = source.kind === "snapshot"
      ? source.providers.get(id) ?? NO_CREDENTIAL
      : provider.credential === undefined
      ? resolveCredential({ kind: "env", variable: conventionEnvFor(id, kind), convention: true }, source.env)
      : credentialAt(`${path}.credential`, provider.credential, source.env, findings)
    if (credential === undefined) continue
    if (credential.location.kind === "env" && !credential.location.convention && credential.value === undefined) {
      findings.warn(`${path}.credential`, `${credential.location.variable} is not set; requests need the caller's own key`)
    }
    const authType = provider.auth_type ?? file.defaults.provider.auth_type ?? info.authType
    const authName = provider.auth_header_name ?? (authType === "query_param" ? "api_key" : info.authName)
    if (authType === "api_key_header" && authName === undefined) {
      findings.error(`${path}.auth_header_name`, `required when auth_type = "api_key_header"`)
      continue
    }
    if (provider.publisher !== undefined && kind !== "vertex") findings.error(`${path}.publisher`, `for kind "vertex" only, not "${kind}"`)
    const vertex = kind === "vertex" ? vertexOf(path, provider, findings) : undefined
    if (vertex === null) continue
    const google = provider.credentials_file === undefined ? undefined : googleOf(path, kind, provider.credentials_file, source, findings)
    if (google === null) continue
    const sigv4 = authType === "sigv4" ? sigv4Of(path, kind, provider.region, baseUrl, awsKeySourceOf(id, provider, source), findings) : undefined
    if (authType !== "sigv4") {
      for (const field of AWS_KEY_FIELDS) if (provider[field] !== undefined) findings.error(`${path}.${field}`, `AWS keys are for auth_type = "sigv4" only`)
    }
    if (authType === "sigv4" && sigv4 === undefined) continue
    const duplicates = provider.models.filter((model, index) => provider.models.indexOf(model) !== index)
    if (duplicates.length > 0) findings.warn(`${path}.models`, `listed twice: ${[...new Set(duplicates)].join(", ")}`)
    const official = isOfficialOpenAi(id, kind, baseUrl)
    if (info.family !== "openai") {
      for (const key of ["max_tokens_param", "responses_api"] as const) {
        if (provider[key] !== undefined) findings.warn(`${path}.${key}`, `has no effect on a ${kind} provider`)
      }
    }
    providers.set(id, {
      id,
      kind,
      // Claude on Vertex speaks the Anthropic wire (rawPredict); Gemini models Google's.
      family: vertex?.publisher === "anthropic" ? "anthropic" : info.family,
      baseUrl,
      models: provider.models,
      credential,
      authType,
      authName: authName ?? "authorization",
      timeoutMs: provider.timeout_ms,
      ttftMs: provider.ttft_ms,
      apiVersion: provider.api_version ?? AZURE_DEFAULT_API_VERSION,
      maxTokensParam: provider.max_tokens_param ?? (official ? "max_completion_tokens" : "max_tokens"),
      responsesApi: info.family === "openai" && (provider.responses_api ?? official),
      ...(sigv4 === undefined ? {} : { sigv4 }),
      ...(vertex === undefined ? {} : { vertex }),
      ...(google === undefined ? {} : { google })
    })
  }
  return providers
}

/**
 * Resolves a model reference (`provider::model` or a plain name) to exactly one
 * provider, or explains why it cannot.
 */
export const resolveModelReference = (
  reference: string,
  providers: ReadonlyMap<string, ResolvedProvider>
): Result.Result<{ readonly providerId: string; readonly model: string }, string> => {
  const separator = reference.indexOf("::")
  if (separator > 0) {
    const providerId = reference.slice(0, separator)
    const model = reference.slice(separator + 2)
    const provider = providers.get(providerId)
    if (provider === undefined) {
      return Result.fail(`provider "${providerId}" is not configured${didYouMean(providerId, providers.keys())}`)
    }
    if (!provider.models.includes(model)) {
      return Result.fail(`model "${model}" is not in providers.${providerId}.models${didYouMean(model, provider.models)}`)
    }
    return Result.succeed({ providerId, model })
  }
  const owners = [...providers.values()].filter((provider) => provider.models.includes(reference))
  if (owners.length === 0) {
    const served = [...providers.values()].flatMap((provider) => provider.models)
    return Result.fail(`model "${reference}" is not in any provider's models${didYouMean(reference, served)}`)
  }
  if (owners.length > 1) {
    const names = owners.map((owner) => `"${owner.id}::${reference}"`).join(" or ")
    return Result.fail(`model "${reference}" is served by ${owners.length} providers; write ${names}`)
  }
  return Result.succeed({ providerId: owners[0].id, model: reference })
}

const checkTargets = (
  file: ConfigFile,
  providers: ReadonlyMap<string, ResolvedProvider>,
  source: CredentialSource,
  findings: Findings
): Map<string, ResolvedTarget> => {
  const targets = new Map<string, ResolvedTarget>()
  for (const [id, target] of Object.entries(file.targets)) {
    const path = `targets.${id}`
    const reference = resolveModelReference(target.model, providers)
    if (Result.isFailure(reference)) {
      findings.error(`${path}.model`, reference.failure)
      continue
    }
    const resolved = reference.success
    let credential: ResolvedCredential | undefined
    if (source.kind === "snapshot") {
      credential = source.targets.get(id)
    } else if (target.credential !== undefined) {
      credential = credentialAt(`${path}.credential`, target.credential, source.env, findings)
      if (credential === undefined) continue
      if (credential.location.kind === "env" && credential.value === undefined) {
        findings.error(`${path}.credential`, `environment variable ${credential.location.variable} is not set`)
        continue
      }
    }
    targets.set(id, {
      id,
      model: resolved.model,
      providerId: resolved.providerId,
      credential,
      weight: target.weight,
      timeoutMs: target.timeout_ms,
      ttftMs: target.ttft_ms,
      hedgeAfterMs: target.hedge_after_ms,
      maxHedges: target.max_hedges,
      onStreamBreak: target.on_stream_break
    })
  }
  return targets
}

const unknownTarget = (name: string, file: ConfigFile): string =>
  `unknown target "${name}"${didYouMean(name, Object.keys(file.targets))}`

const checkTargetList = (path: string, strategy: string, targets: ReadonlyArray<string>, file: ConfigFile, findings: Findings) => {
  if (targets.length === 0) findings.error(path, "needs at least one target")
  if (strategy === "single" && targets.length > 1) {
    findings.error(path, `strategy "single" takes exactly one target, got ${targets.length}; use "fallback" or "weighted"`)
  }
  targets.forEach((target, index) => {
    if (file.targets[target] === undefined) findings.error(`${path}[${index}]`, unknownTarget(target, file))
  })
}

const checkSteps = (path: string, steps: ReadonlyArray<Step>, file: ConfigFile, findings: Findings) => {
  if (steps.length === 0) findings.error(path, "needs at least one step")
  steps.forEach((step, index) => {
    checkTargetList(`${path}[${index}].targets`, step.strategy, step.targets, file, findings)
    checkHedge(`${path}[${index}]`, step.hedge_after_ms, [step], findings)
  })
}

/** A step a hedge can start the next target of: ordered, with a target after the first. */
const canHedge = (step: { readonly strategy: string; readonly targets: ReadonlyArray<string> }): boolean =>
  step.strategy === "fallback" && step.targets.length > 1

/** `hedge_after_ms` over steps none of which has a next target to start: it would do nothing. */
const checkHedge = (
  path: string,
  hedgeAfterMs: number | undefined,
  steps: ReadonlyArray<{ readonly strategy: string; readonly targets: ReadonlyArray<string> }>,
  findings: Findings
) => {
  if (hedgeAfterMs === undefined || steps.some(canHedge)) return
  findings.warn(
    `${path}.hedge_after_ms`,
    `ignored: hedging starts a fallback step's next target, and no step here has one (strategy "fallback" with two targets or more)`
  )
}

const checkRoute = (id: string, route: Route, file: ConfigFile, findings: Findings) => {
  const path = `routes.${id}`
  if (route.models.length === 0) findings.error(`${path}.models`, "needs at least one model name")
  if (route.steps !== undefined) {
    if (route.targets !== undefined) findings.warn(`${path}.targets`, "ignored: steps are given")
    checkSteps(`${path}.steps`, route.steps, file, findings)
    checkHedge(path, route.hedge_after_ms, route.steps, findings)
  } else if (route.targets !== undefined) {
    checkTargetList(`${path}.targets`, route.strategy, route.targets, file, findings)
    checkHedge(path, route.hedge_after_ms, [{ strategy: route.strategy, targets: route.targets }], findings)
  } else {
    findings.error(path, "needs targets or steps")
  }
}

const checkVariants = (
  path: string,
  fn: FunctionDef,
  file: ConfigFile,
  providers: ReadonlyMap<string, ResolvedProvider>,
  findings: Findings
) => {
  const variants = Object.entries(fn.variants ?? {})
  if (variants.length === 0) {
    findings.error(`${path}.variants`, `strategy "experiment" needs at least one variant`)
    return
  }
  const allowlist = VARIANT_PARAMETER_ALLOWLIST[fn.endpoint]
  for (const [name, variant] of variants) {
    const variantPath = `${path}.variants.${name}`
    if (!(variant.weight > 0)) findings.error(`${variantPath}.weight`, `must be greater than 0, got ${variant.weight}`)
    if ((variant.model === undefined) === (variant.target === undefined)) {
      findings.error(variantPath, "set exactly one of model or target")
    } else if (variant.model !== undefined) {
      const resolved = resolveModelReference(variant.model, providers)
      if (Result.isFailure(resolved)) findings.error(`${variantPath}.model`, resolved.failure)
    } else if (variant.target !== undefined && file.targets[variant.target] === undefined) {
      findings.error(`${variantPath}.target`, unknownTarget(variant.target, file))
    }
    for (const parameter of Object.keys(variantParameters(variant))) {
      if (PROTECTED_PARAMETERS.has(parameter)) {
        findings.error(`${variantPath}.${parameter}`, `"${parameter}" is protected and cannot be set by a variant`)
      } else if (!allowlist.has(parameter)) {
        // One edit only: unlisted parameters are often real provider-specific ones, not typos.
        const suggestion = closestName(parameter, allowlist, 1)
        const hint = suggestion === undefined ? ";" : `; did you mean "${suggestion}"?`
        findings.warn(`${variantPath}.${parameter}`, `not a known ${fn.endpoint} parameter${hint} passed through as is`)
      }
    }
  }
}

const checkFunction = (
  name: string,
  fn: FunctionDef,
  file: ConfigFile,
  providers: ReadonlyMap<string, ResolvedProvider>,
  findings: Findings
) => {
  const path = `functions.${name}`
  if (fn.strategy === "experiment") {
    if (fn.models !== undefined || fn.targets !== undefined || fn.steps !== undefined) {
      findings.error(path, `strategy "experiment" takes variants, not models, targets or steps`)
    }
    checkVariants(path, fn, file, providers, findings)
    if (fn.hedge_after_ms !== undefined) findings.warn(`${path}.hedge_after_ms`, "ignored: an experiment's variant has no next target to hedge with")
    return
  }
  if (fn.variants !== undefined) findings.error(`${path}.variants`, `variants need strategy = "experiment"`)
  // Inline models are a target list of their own: with targets or steps beside them the
  // routing table would use the models while only the targets/steps were checked.
  if (fn.models !== undefined && (fn.targets !== undefined || fn.steps !== undefined)) {
    findings.error(path, `models and ${fn.targets !== undefined ? "targets" : "steps"} are mutually exclusive`)
    return
  }
  const lists = fn.steps ?? [{ strategy: fn.strategy, targets: fn.targets ?? fn.models ?? [] }]
  checkHedge(path, fn.hedge_after_ms, lists, findings)
  if (fn.steps !== undefined) {
    checkSteps(`${path}.steps`, fn.steps, file, findings)
  } else if (fn.targets !== undefined) {
    checkTargetList(`${path}.targets`, fn.strategy, fn.targets, file, findings)
  } else if (fn.models !== undefined) {
    if (fn.models.length === 0) findings.error(`${path}.models`, "needs at least one model")
    if (fn.strategy === "single" && fn.models.length > 1) {
      findings.error(`${path}.models`, `strategy "single" takes exactly one model, got ${fn.models.length}`)
    }
    fn.models.forEach((model, index) => {
      const resolved = resolveModelReference(model, providers)
      if (Result.isFailure(resolved)) findings.error(`${path}.models[${index}]`, resolved.failure)
    })
  } else {
    findings.error(path, "needs models, targets, steps or (with strategy experiment) variants")
  }
}

/**
 * `[security]`: an empty term would match every request; a term given twice
 * (ignoring case, as matching does) is redundant. Messages name positions,
 * never terms: the blocklist is never printed.
 */
const checkSecurity = (file: ConfigFile, findings: Findings) => {
  const { security } = file
  const seen = new Map<string, number>()
  security.blocklist.forEach((term, index) => {
    if (term.trim() === "") {
      findings.error(`security.blocklist[${index}]`, "an empty or blank term would match every request; remove it")
      return
    }
    const folded = foldCase(term)
    const first = seen.get(folded)
    if (first === undefined) seen.set(folded, index)
    else findings.warn(`security.blocklist[${index}]`, `the same term as security.blocklist[${first}] (case is ignored); it has no effect`)
  })
  if (!security.enabled && security.output_guardrails) {
    findings.warn("security.output_guardrails", "has no effect while security.enabled = false")
  }
}

const checkCache = (file: ConfigFile, findings: Findings) => {
  const cache = file.cache
  if (cache.enabled && !isRedisUrl(cache.url)) {
    // Not echoed: a Redis URL may carry a password.
    findings.error("cache.url", "expected a redis:// or rediss:// URL with a host, or a cluster's redis+cluster://host:port,host:port")
  }
  if (cache.enabled && cache.encrypt && cache.encrypt_salt === "") {
    findings.error("cache.encrypt_salt", "must be non-empty when cache.encrypt = true")
  }
  if (cache.enabled && !cache.encrypt) {
    findings.warn("cache.encrypt", "false: answers are stored in clear; anyone who can read the store can read prompts' answers")
  }
  if (cache.ttl_seconds > cache.max_ttl_seconds) {
    findings.error("cache.ttl_seconds", `${cache.ttl_seconds} exceeds cache.max_ttl_seconds (${cache.max_ttl_seconds})`)
  }
}

const checkTenantRouting = (section: ConfigFile["tenant_routing"], findings: Findings) => {
  if (!isRedisUrl(section.redis_url)) {
    findings.error("tenant_routing.redis_url", `expected a redis:// or rediss:// URL, or a cluster's redis+cluster://host:port,host:port`)
  }
  const fallback = section.api_fallback_url
  if (fallback !== undefined && fallback !== "") {
    if (normalizeBaseUrl(fallback) === undefined) {
      findings.error("tenant_routing.api_fallback_url", `expected an http(s) URL, got ${JSON.stringify(fallback)}`)
    }
  }
  if (section.private_key_path === undefined) {
    findings.warn("tenant_routing.private_key_path", "not set: snapshots are read as plaintext JSON (development only)")
  }
}

export const checkConfig = (file: ConfigFile, credentials: CredentialSource): CheckResult => {
  const findings = new Findings()
  const providers = checkProviders(file, credentials, findings)
  const targets = checkTargets(file, providers, credentials, findings)
  for (const [id, route] of Object.entries(file.routes)) checkRoute(id, route, file, findings)
  for (const [name, fn] of Object.entries(file.functions)) checkFunction(name, fn, file, providers, findings)
  checkSecurity(file, findings)
  for (const model of Object.keys(file.models)) {
    if (![...providers.values()].some((provider) => provider.models.includes(model))) {
      findings.warn(`models.${model}`, "no provider lists this model; the setting has no effect")
    }
    const priced = Object.keys(file.models[model]).some((field) => field.endsWith("_per_mtok"))
    if (priced && modelPrice(file.models, model) === undefined) {
      findings.warn(`models.${model}`, "has a price but not both input_per_mtok and output_per_mtok; its requests have no cost")
    }
  }

  let antiEntropyIntervalSecs = file.tenant_routing.anti_entropy_interval_secs
  if (antiEntropyIntervalSecs <= 0) {
    findings.warn("tenant_routing.anti_entropy_interval_secs", `must be > 0, got ${antiEntropyIntervalSecs}; using 300`)
    antiEntropyIntervalSecs = 300
  }
  if (file.tenant_routing.enabled) checkTenantRouting(file.tenant_routing, findings)
  checkCache(file, findings)
  checkResponses(file, findings, isRedisUrl)
  if (file.auth.enabled && (file.auth.exchange_url === undefined || file.auth.exchange_url === "")) {
    findings.error("auth.exchange_url", "required when auth.enabled = true")
  }
  checkTelemetrySections(file, findings)
  const keys = credentials.kind === "environment" ? checkKeys(file, credentials.env, findings, isRedisUrl) : []
  if (file.routing.circuit_breaker.enabled) {
    findings.warn("routing.circuit_breaker", "deprecated and ignored; failover is sequential and stateless (strategy = \"fallback\")")
  }
  const adminKey = checkAdminKey(file, credentials, findings)
  return { errors: findings.errors, warnings: findings.warnings, providers, targets, keys, antiEntropyIntervalSecs, adminKey }
}
