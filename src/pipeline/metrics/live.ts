/**
 * The live metrics (`Metrics.layer`): a prom-client registry of its own
 * (never prom-client's global one) with the gateway's counters, histograms
 * and gauges, and the recorder the edge calls once per finished request.
 * Loaded only when metrics are on.
 */
import { Effect } from "effect"
import { Gauge, Registry } from "prom-client"
import { workerScrape } from "../../infra/metrics-cluster.ts"
import { CounterFamily, HistogramFamily } from "./families.ts"
import type { DependencyCheck, MetricsShape, RecordRequest } from "./shape.ts"

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const NONE = "none"

/** The caller format of a request: the Responses API by its path, else the caller's wire family. */
const callerFormatOf = (endpoint: string, caller: string): string => (endpoint === "/v1/responses" ? "responses" : caller)

const makeRecorder = (registry: Registry) => {
  const counter = (name: string, help: string, labelNames: ReadonlyArray<string>) => new CounterFamily(name, help, labelNames, registry)
  const histogram = (name: string, help: string, labelNames: ReadonlyArray<string>) => new HistogramFamily(name, help, labelNames, SECONDS_BUCKETS, registry)

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

  /** Adds `amount` to the one-label counter's `value`. */
  const count = (family: CounterFamily, value: string, amount = 1) => {
    ;(family.at(value) ?? family.create(value, [value])).value += amount
  }
  const addTokens = (type: string, provider: string, model: string, amount: number | undefined) => {
    if (amount === undefined || amount <= 0) return
    const key = `${type}\0${provider}\0${model}`
    ;(tokens.at(key) ?? tokens.create(key, [type, provider, model])).value += amount
  }

  const record: RecordRequest = (endpoint, caller, status, durationMs, fields) => {
    const provider = fields.provider ?? NONE
    const model = fields.model ?? NONE
    const route = fields.route ?? NONE
    const errorClass = fields.error_code ?? NONE
    const format = callerFormatOf(endpoint, caller)
    const requestKey = `${endpoint}\0${format}\0${provider}\0${model}\0${route}\0${status}\0${errorClass}`
    ;(requests.at(requestKey) ?? requests.create(requestKey, [endpoint, format, provider, model, route, String(status), errorClass])).value++
    const pair = `${provider}\0${model}`
    const durationKey = `${endpoint}\0${pair}`
    duration.observe(duration.at(durationKey) ?? duration.create(durationKey, [endpoint, provider, model]), durationMs / 1000)
    if (fields.ttft_ms !== undefined) firstToken.observe(firstToken.at(pair) ?? firstToken.create(pair, [provider, model]), fields.ttft_ms / 1000)
    if (fields.input_tokens !== undefined) {
      addTokens("input", provider, model, fields.input_tokens)
      addTokens("output", provider, model, fields.output_tokens)
      addTokens("cached", provider, model, fields.cached_tokens)
      addTokens("reasoning", provider, model, fields.reasoning_tokens)
    }
    if (fields.attempts !== undefined) {
      count(attempts, provider, fields.attempts)
      if (fields.retries !== undefined) count(retries, provider, fields.retries)
      if (fields.failovers !== undefined) count(failovers, provider, fields.failovers)
    }
    if (fields.cache !== undefined) count(cache, fields.cache)
    if (fields.guardrail !== undefined) count(guardrail, fields.guardrail)
    else if (fields.guardrail_output !== undefined && status === 422) count(guardrail, fields.guardrail_output)
    if (status === 429) count(rateLimited, fields.error_code === "rate_limit" ? "upstream" : "gateway")
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
