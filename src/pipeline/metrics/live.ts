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
import type { CounterCell, HistogramCell } from "./families.ts"
import type { DependencyCheck, MetricsShape, RecordRequest } from "./shape.ts"

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const NONE = "none"
const TOKEN_TYPES = ["input", "output", "cached", "reasoning"] as const

/** The cells a request of one endpoint, provider and model adds to, kept once found. */
interface Series {
  readonly duration: HistogramCell
  firstToken: HistogramCell | undefined
  /** By `TOKEN_TYPES` index. */
  readonly tokens: Array<CounterCell | undefined>
  /** By caller format, route, status and error class: lookups of values the request holds, no key made per request. */
  readonly requests: Map<string, Map<string, Map<number, Map<string, CounterCell>>>>
}

/** The map under `key` in `map`, made on first use. */
const branch = <K, M extends Map<unknown, unknown>>(map: Map<K, M>, key: K): M => {
  let found = map.get(key)
  if (found === undefined) map.set(key, found = new Map() as M)
  return found
}

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
  const hedges = counter("gateway_hedges_total", "Hedges started (hedge_after_ms), by the provider and model of the hedge and whether its answer was the one sent (won) or not (lost).", [
    "provider",
    "model",
    "outcome"
  ])
  const continuations = counter(
    "gateway_continuations_total",
    "Broken streams continued on another target (on_stream_break = \"continue\"), by the provider continued on and outcome (ok, or failed: the error frame).",
    ["provider", "outcome"]
  )
  const cache = counter("gateway_cache_requests_total", "Response cache lookups, by result.", ["result"])
  const guardrail = counter("gateway_guardrail_refusals_total", "Requests a guardrail refused, by category.", ["category"])
  const rateLimited = counter("gateway_rate_limit_refusals_total", "Requests answered 429, by who refused (upstream or gateway).", ["source"])
  const cost = counter("gateway_cost_usd_total", "USD spent upstream at the configured prices (every attempt priced), by the provider and model that answered.", ["provider", "model"])
  const uncounted = counter(
    "gateway_limits_uncounted_total",
    "Requests admitted without being counted against their limits because the limits store was unreachable (on_store_error = \"allow\").",
    ["on_store_error"]
  )
  const storeErrors = counter(
    "gateway_responses_store_errors_total",
    "Responses store operations that failed (store down or too slow), by op: write (the answer went out unstored), read (state a request needed: 503).",
    ["op"]
  )

  /** Adds `amount` to the one-label counter's `value`. */
  const count = (family: CounterFamily, value: string, amount = 1) => {
    ;(family.at(value) ?? family.create(value, [value])).value += amount
  }
  /** The cells of one endpoint, provider and model, found by three lookups of strings the request already holds. */
  const series = new Map<string, Map<string, Map<string, Series>>>()
  const seriesOf = (endpoint: string, provider: string, model: string): Series => {
    let byProvider = series.get(endpoint)
    if (byProvider === undefined) series.set(endpoint, byProvider = new Map())
    let byModel = byProvider.get(provider)
    if (byModel === undefined) byProvider.set(provider, byModel = new Map())
    let found = byModel.get(model)
    if (found === undefined) {
      const key = `${endpoint}\0${provider}\0${model}`
      found = {
        duration: duration.at(key) ?? duration.create(key, [endpoint, provider, model]),
        firstToken: undefined,
        tokens: [undefined, undefined, undefined, undefined],
        requests: new Map()
      }
      byModel.set(model, found)
    }
    return found
  }
  const addTokens = (cells: Series, type: number, provider: string, model: string, amount: number | undefined) => {
    if (amount === undefined || amount <= 0) return
    let cell = cells.tokens[type]
    if (cell === undefined) {
      const key = `${TOKEN_TYPES[type]}\0${provider}\0${model}`
      cell = cells.tokens[type] = tokens.at(key) ?? tokens.create(key, [TOKEN_TYPES[type], provider, model])
    }
    cell.value += amount
  }

  const record: RecordRequest = (endpoint, caller, status, durationMs, fields) => {
    const provider = fields.provider ?? NONE
    const model = fields.model ?? NONE
    const route = fields.route ?? NONE
    const errorClass = fields.error_code ?? NONE
    const format = callerFormatOf(endpoint, caller)
    const cells = seriesOf(endpoint, provider, model)
    const byError = branch(branch(branch(cells.requests, format), route), status)
    let requested = byError.get(errorClass)
    if (requested === undefined) {
      const key = `${endpoint}\0${provider}\0${model}\0${format}\0${route}\0${status}\0${errorClass}`
      requested = requests.at(key) ?? requests.create(key, [endpoint, format, provider, model, route, String(status), errorClass])
      byError.set(errorClass, requested)
    }
    requested.value++
    duration.observe(cells.duration, durationMs / 1000)
    if (fields.ttft_ms !== undefined) {
      const pair = `${provider}\0${model}`
      cells.firstToken ??= firstToken.at(pair) ?? firstToken.create(pair, [provider, model])
      firstToken.observe(cells.firstToken, fields.ttft_ms / 1000)
    }
    if (fields.input_tokens !== undefined) {
      addTokens(cells, 0, provider, model, fields.input_tokens)
      addTokens(cells, 1, provider, model, fields.output_tokens)
      addTokens(cells, 2, provider, model, fields.cached_tokens)
      addTokens(cells, 3, provider, model, fields.reasoning_tokens)
    }
    if (fields.attempts !== undefined) {
      count(attempts, provider, fields.attempts)
      if (fields.retries !== undefined) count(retries, provider, fields.retries)
      if (fields.failovers !== undefined) count(failovers, provider, fields.failovers)
    }
    if (fields.hedges !== undefined) {
      for (const hedge of fields.hedges) {
        const key = `${hedge.provider}\0${hedge.model}\0${hedge.outcome}`
        ;(hedges.at(key) ?? hedges.create(key, [hedge.provider, hedge.model, hedge.outcome])).value++
      }
    }
    if (fields.continued !== undefined) {
      const pair = `${fields.continued_on ?? "none"}\0${fields.continued}`
      ;(continuations.at(pair) ?? continuations.create(pair, [fields.continued_on ?? "none", fields.continued])).value++
    }
    if (fields.cache !== undefined) count(cache, fields.cache)
    if (fields.guardrail !== undefined) count(guardrail, fields.guardrail)
    else if (fields.guardrail_output !== undefined && status === 422) count(guardrail, fields.guardrail_output)
    if (fields.cost_usd !== undefined && fields.cost_usd > 0) {
      const pair = `${provider}\0${model}`
      ;(cost.at(pair) ?? cost.create(pair, [provider, model])).value += fields.cost_usd
    }
    if (fields.limits === "uncounted") count(uncounted, "allow")
    if (fields.responses_store === "unstored") count(storeErrors, "write")
    else if (fields.responses_store === "unavailable") count(storeErrors, "read")
    // The gateway's own limits refuse with the same error class as an upstream 429: the log line says which.
    if (status === 429) count(rateLimited, fields.limits !== "refused" && fields.error_code === "rate_limit" ? "upstream" : "gateway")
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
