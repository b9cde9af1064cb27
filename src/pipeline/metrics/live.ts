/**
 * The live metrics (`Metrics.layer`): a prom-client registry of its own
 * (never prom-client's global one) with the gateway's counters, histograms
 * and gauges, and the recorder the edge calls once per finished request.
 * Loaded only when metrics are on.
 */
import { Effect } from "effect"
import { Counter, Gauge, Histogram, Registry } from "prom-client"
import { workerScrape } from "../../infra/metrics-cluster.ts"
import type { DependencyCheck, MetricsShape, RecordRequest } from "./shape.ts"

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const NONE = "none"

/** A label child per distinct combination, made on first use. */
const children = <C>(make: (...labels: Array<string>) => C) => {
  const made = new Map<string, C>()
  return (key: string, ...labels: Array<string>): C => {
    let child = made.get(key)
    if (child === undefined) {
      child = make(...labels)
      made.set(key, child)
    }
    return child
  }
}

/** The caller format of a request: the Responses API by its path, else the caller's wire family. */
const callerFormatOf = (endpoint: string, caller: string): string => (endpoint === "/v1/responses" ? "responses" : caller)

const makeRecorder = (registry: Registry) => {
  const counter = (name: string, help: string, labelNames: Array<string> = []) => new Counter({ name, help, labelNames, registers: [registry] })
  const histogram = (name: string, help: string, labelNames: Array<string>) =>
    new Histogram({ name, help, labelNames, buckets: SECONDS_BUCKETS, registers: [registry] })

  const requests = counter("gateway_requests_total", "Requests answered, by endpoint, caller format, provider, model, route, status and error class.", [
    "endpoint",
    "caller_format",
    "provider",
    "model",
    "route",
    "status",
    "error_class"
  ])
  const duration = histogram("gateway_request_duration_seconds", "Time from a request's arrival to the end of its response.", ["endpoint", "provider", "model"])
  const firstToken = histogram("gateway_time_to_first_token_seconds", "Time from a request's arrival to the first token of its answer.", ["provider", "model"])
  const tokens = counter("gateway_tokens_total", "Tokens the providers reported, by type (input, output, cached, reasoning).", ["type", "provider", "model"])
  const attempts = counter("gateway_upstream_attempts_total", "Upstream attempts made, by the provider that answered the request last.", ["provider"])
  const retries = counter("gateway_retries_total", "Attempts that retried the target before them.", ["provider"])
  const failovers = counter("gateway_failovers_total", "Attempts that moved on to another target.", ["provider"])
  const cache = counter("gateway_cache_requests_total", "Response cache lookups, by result.", ["result"])
  const guardrail = counter("gateway_guardrail_refusals_total", "Requests a guardrail refused, by category.", ["category"])
  const rateLimited = counter("gateway_rate_limit_refusals_total", "Requests answered 429, by who refused (upstream or gateway).", ["source"])

  const requestChild = children((...labels) => requests.labels(...labels))
  const durationChild = children((...labels) => duration.labels(...labels))
  const firstTokenChild = children((...labels) => firstToken.labels(...labels))
  const tokenChild = children((...labels) => tokens.labels(...labels))
  const attemptChild = children((provider) => ({ attempts: attempts.labels(provider), retries: retries.labels(provider), failovers: failovers.labels(provider) }))
  const cacheChild = children((result) => cache.labels(result))
  const guardrailChild = children((category) => guardrail.labels(category))
  const rateLimitChild = children((source) => rateLimited.labels(source))

  const addTokens = (type: string, provider: string, model: string, count: number | undefined) => {
    if (count !== undefined && count > 0) tokenChild(`${type}\0${provider}\0${model}`, type, provider, model).inc(count)
  }

  const record: RecordRequest = (endpoint, caller, status, durationMs, fields) => {
    const provider = fields.provider ?? NONE
    const model = fields.model ?? NONE
    const route = fields.route ?? NONE
    const errorClass = fields.error_code ?? NONE
    const format = callerFormatOf(endpoint, caller)
    requestChild(`${endpoint}\0${format}\0${provider}\0${model}\0${route}\0${status}\0${errorClass}`, endpoint, format, provider, model, route, String(status), errorClass)
      .inc()
    const pair = `${provider}\0${model}`
    durationChild(`${endpoint}\0${pair}`, endpoint, provider, model).observe(durationMs / 1000)
    if (fields.ttft_ms !== undefined) firstTokenChild(pair, provider, model).observe(fields.ttft_ms / 1000)
    if (fields.input_tokens !== undefined) {
      addTokens("input", provider, model, fields.input_tokens)
      addTokens("output", provider, model, fields.output_tokens)
      addTokens("cached", provider, model, fields.cached_tokens)
      addTokens("reasoning", provider, model, fields.reasoning_tokens)
    }
    if (fields.attempts !== undefined) {
      const counts = attemptChild(provider, provider)
      counts.attempts.inc(fields.attempts)
      if (fields.retries !== undefined) counts.retries.inc(fields.retries)
      if (fields.failovers !== undefined) counts.failovers.inc(fields.failovers)
    }
    if (fields.cache !== undefined) cacheChild(fields.cache, fields.cache).inc()
    if (fields.guardrail !== undefined) guardrailChild(fields.guardrail, fields.guardrail).inc()
    else if (fields.guardrail_output !== undefined && status === 422) guardrailChild(fields.guardrail_output, fields.guardrail_output).inc()
    if (status === 429) {
      const source = fields.error_code === "rate_limit" ? "upstream" : "gateway"
      rateLimitChild(source, source).inc()
    }
  }
  return record
}

/**
 * The live metrics on a registry of their own. A cluster worker's scrape
 * answers the sum over every worker (src/infra/metrics-cluster.ts).
 */
export const makeLiveMetrics = (options: { readonly clusterWorker: boolean }): MetricsShape => {
  const registry = new Registry()
  const record = makeRecorder(registry)
  let openStreams = (): number => 0
  let dependencies: ReadonlyArray<DependencyCheck> = []
  new Gauge({
    name: "gateway_open_streams",
    help: "Event streams being written to callers.",
    registers: [registry],
    collect() {
      this.set(openStreams())
    }
  })
  new Gauge({
    name: "gateway_dependency_up",
    help: "Whether a dependency (Redis of the cache or the tenant store) answers: 1 up, 0 down.",
    labelNames: ["dependency"],
    registers: [registry],
    // Across workers: down when any worker finds it down.
    aggregator: "min",
    async collect() {
      const checks = dependencies
      const results = await Promise.all(checks.map(({ up }) => up()))
      this.reset()
      checks.forEach(({ name }, i) => this.set({ dependency: name }, results[i] ? 1 : 0))
    }
  })
  const text = options.clusterWorker ? workerScrape(registry) : () => registry.metrics()
  return {
    record,
    scrape: Effect.map(Effect.promise(text), (body) => ({ contentType: registry.contentType, body })),
    watchOpenStreams: (count) => void (openStreams = count),
    watchDependencies: (checks) => void (dependencies = checks)
  }
}
