/**
 * `npm run bench`: the gateway against a direct call to the same fake
 * upstream, in one run. The fake upstream and the gateway each run in their
 * own process; this process generates load over loopback.
 *
 * Scenarios: fast path non-stream, fast path stream (20 chunks), normalized
 * stream (Anthropic caller → OpenAI upstream). For each: requests/s and
 * latency at fixed concurrency, latency at a paced 500 requests/s, and the
 * gateway's CPU time per proxied request (from /proc, user + system).
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { spawn, spawnSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"
import { Redis } from "ioredis"
import { runGuardrailBench } from "./guardrail.ts"
import { runTenancyBench } from "./tenancy.ts"

const QUICK = process.argv.includes("--quick")
const REQUESTS = QUICK ? 2_000 : 10_000
const WARMUP = QUICK ? 500 : 2_000
const CONCURRENCY = 32
const PACED_RPS = 500
const PACED_SECONDS = QUICK ? 2 : 6
const DEADLINE_MS = 120_000
const root = new URL("..", import.meta.url).pathname

/**
 * With two or more cores and `taskset`, the gateway gets a core of its own
 * (the upstream and this load generator share the other), so the figures do
 * not depend on how the scheduler mixes three busy processes.
 */
const PIN = cpus().length >= 2 && spawnSync("taskset", ["-c", "0", "true"]).status === 0

/**
 * Starts a child whose stdout goes to a file (a log pipe drained by this busy
 * load generator would make the child's synchronous stdout writes wait) and
 * resolves with the first line it writes (its address).
 */
const startProcess = (
  args: Array<string>,
  cpu: number,
  dir: string,
  name: string,
  ready: (line: string) => boolean = () => true
): Promise<{ child: ChildProcess; line: string }> =>
  new Promise((resolve, reject) => {
    const [command, argv] = PIN ? ["taskset", ["-c", String(cpu), process.execPath, ...args]] : [process.execPath, args]
    const logPath = join(dir, `${name}.log`)
    const out = openSync(logPath, "w")
    const child = spawn(command, argv, { cwd: root, env: process.env, stdio: ["ignore", out, "inherit"] })
    closeSync(out)
    const deadline = Date.now() + 15_000
    const poll = setInterval(() => {
      const complete = readFileSync(logPath, "utf8").split("\n").slice(0, -1)
      const line = complete.find(ready)
      if (line !== undefined) {
        clearInterval(poll)
        resolve({ child, line })
      } else if (Date.now() > deadline) {
        clearInterval(poll)
        reject(new Error(`${args.join(" ")} did not start`))
      }
    }, 20)
    child.once("exit", (code) => {
      clearInterval(poll)
      reject(new Error(`${args.join(" ")} exited with ${code}`))
    })
  })

const cpuMicros = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the command).
  const ticks = Number(fields[11]) + Number(fields[12])
  return (ticks * 1_000_000) / 100
}

const percentile = (sorted: Array<number>, p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

interface Scenario {
  readonly name: string
  readonly origin: string
  readonly path: string
  readonly body: string
  readonly headers: Record<string, string>
  /** A distinct body per request (the n-th), instead of `body`. */
  readonly bodyFor?: ((n: number) => string) | undefined
}

let requestCount = 0

/**
 * One request through undici's low-level dispatch (no body stream objects):
 * the load generator shares a core with the upstream, so it must stay cheap.
 * Resolves with the latency in ms once the whole body arrived.
 */
const oneRequest = (pool: Pool, scenario: Scenario): Promise<number> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    let status = 0
    const body = scenario.bodyFor === undefined ? scenario.body : scenario.bodyFor(requestCount++)
    pool.dispatch({ method: "POST", path: scenario.path, headers: scenario.headers, body }, {
      onRequestStart() {},
      onResponseStart(_controller: unknown, statusCode: number) {
        status = statusCode
      },
      onResponseData() {},
      onResponseEnd() {
        if (status === 200) resolve(performance.now() - started)
        else reject(new Error(`${scenario.name}: status ${status}`))
      },
      onResponseError(_controller: unknown, error: Error) {
        reject(error)
      }
    })
  })

/** `count` requests at fixed concurrency: throughput and latency. */
const closedLoop = async (pool: Pool, scenario: Scenario, count: number) => {
  const latencies: Array<number> = []
  let issued = 0
  const deadline = Date.now() + DEADLINE_MS
  const started = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (issued < count && Date.now() < deadline) {
      issued++
      latencies.push(await oneRequest(pool, scenario))
    }
  }))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return { requests: latencies.length, rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

/** Requests started at a fixed rate, whatever the latency: the latency a user sees at that load. */
const pacedLoop = async (pool: Pool, scenario: Scenario) => {
  const latencies: Array<number> = []
  const total = PACED_RPS * PACED_SECONDS
  const interval = 1000 / PACED_RPS
  const started = performance.now()
  const inFlight: Array<Promise<void>> = []
  for (let i = 0; i < total; i++) {
    const due = started + i * interval
    const wait = due - performance.now()
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    inFlight.push(oneRequest(pool, scenario).then((ms) => {
      latencies.push(ms)
    }))
  }
  await Promise.all(inFlight)
  latencies.sort((a, b) => a - b)
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

/** An OTLP receiver (accepting and forgetting exports) in its own process on core 1, like the upstream. */
const startReceiver = async (dir: string): Promise<{ readonly url: string; readonly child: ChildProcess }> => {
  const started = await startProcess(["bench/telemetry.ts", "--receiver"], 1, dir, "otlp-receiver")
  return { url: started.line.trim(), child: started.child }
}

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-bench-"))
  const upstream = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], 1, dir, "upstream")
  const upstreamUrl = JSON.parse(upstream.line).url as string
  /** A gateway on core 0 with the base configuration plus `extra` TOML (`telemetry` replaces the [telemetry] table). */
  const startGateway = async (name: string, extra = "", telemetry = "[telemetry]\nenabled = false\nlog_level = \"info\"") => {
    const configPath = join(dir, `${name}.toml`)
    writeFileSync(configPath, `[server]
host = "127.0.0.1"
port = 0

[providers.openai]
base_url = "${upstreamUrl}/v1"
models = ["gpt-4o"]
credential = "none"

${telemetry}
${extra}`)
    const started = await startProcess(["src/main.ts", "serve", "--config", configPath], 0, dir, name, (line) => line.includes("\"port\""))
    return { child: started.child, url: `http://127.0.0.1:${JSON.parse(started.line).port as number}` }
  }
  const gateway = await startGateway("gateway")
  const gatewayUrl = gateway.url

  const twentyWords = Array.from({ length: 18 }, (_, i) => `word${i}`).join(" ")
  const chat = (stream: boolean) => JSON.stringify({ model: "gpt-4o", stream, messages: [{ role: "user", content: stream ? twentyWords : "hello" }] })
  const jsonHeaders = { "content-type": "application/json", authorization: "Bearer bench" }
  const scenarios: Array<{ label: string; direct: Scenario; viaGateway: Scenario }> = [
    {
      label: "fast path, non-stream",
      direct: { name: "direct", origin: upstreamUrl, path: "/v1/chat/completions", body: chat(false), headers: jsonHeaders },
      viaGateway: { name: "gateway", origin: gatewayUrl, path: "/v1/chat/completions", body: chat(false), headers: jsonHeaders }
    },
    {
      label: "fast path, stream (20 chunks)",
      direct: { name: "direct", origin: upstreamUrl, path: "/v1/chat/completions", body: chat(true), headers: jsonHeaders },
      viaGateway: { name: "gateway", origin: gatewayUrl, path: "/v1/chat/completions", body: chat(true), headers: jsonHeaders }
    },
    {
      label: "normalized stream (anthropic caller → openai)",
      direct: { name: "direct", origin: upstreamUrl, path: "/v1/chat/completions", body: chat(true), headers: jsonHeaders },
      viaGateway: {
        name: "gateway",
        origin: gatewayUrl,
        path: "/v1/messages",
        body: JSON.stringify({ model: "gpt-4o", stream: true, max_tokens: 256, messages: [{ role: "user", content: twentyWords }] }),
        headers: { ...jsonHeaders, "anthropic-version": "2023-06-01" }
      }
    }
  ]

  const results: Array<Record<string, unknown>> = []
  let guardrails: Record<string, number> = {}
  let cache: Record<string, number> = {}
  let telemetry: Record<string, number> = {}
  let tenancy: Record<string, unknown> = {}
  const pools = new Map<string, Pool>()
  const poolFor = (origin: string) => {
    let pool = pools.get(origin)
    if (pool === undefined) {
      pool = new Pool(origin, { connections: CONCURRENCY * 2 })
      pools.set(origin, pool)
    }
    return pool
  }
  /**
   * Stops a gateway and forgets its connections: a later gateway may get the
   * same port, and a pooled connection to the old one would send it requests.
   */
  const stopGateway = async (running: { readonly child: ChildProcess; readonly url: string }) => {
    const pool = pools.get(running.url)
    pools.delete(running.url)
    await pool?.destroy()
    if (running.child.exitCode !== null) return
    const exited = new Promise((resolve) => running.child.once("exit", resolve))
    running.child.kill("SIGTERM")
    const timer = setTimeout(() => running.child.kill("SIGKILL"), 10_000)
    await exited
    clearTimeout(timer)
  }
  try {
    for (const { label, direct, viaGateway } of scenarios) {
      await closedLoop(poolFor(direct.origin), direct, WARMUP)
      await closedLoop(poolFor(viaGateway.origin), viaGateway, WARMUP)
      const directRun = await closedLoop(poolFor(direct.origin), direct, REQUESTS)
      const cpuBefore = cpuMicros(gateway.child.pid!)
      const gatewayRun = await closedLoop(poolFor(viaGateway.origin), viaGateway, REQUESTS)
      const cpuPerRequest = (cpuMicros(gateway.child.pid!) - cpuBefore) / gatewayRun.requests
      const directPaced = await pacedLoop(poolFor(direct.origin), direct)
      const gatewayPaced = await pacedLoop(poolFor(viaGateway.origin), viaGateway)
      results.push({
        scenario: label,
        direct_rps: Math.round(directRun.rps),
        gateway_rps: Math.round(gatewayRun.rps),
        gateway_cpu_us_per_request: Math.round(cpuPerRequest),
        [`direct_p50_ms_at_${PACED_RPS}rps`]: round(directPaced.p50),
        [`gateway_p50_ms_at_${PACED_RPS}rps`]: round(gatewayPaced.p50),
        [`added_p50_ms_at_${PACED_RPS}rps`]: round(gatewayPaced.p50 - directPaced.p50),
        [`direct_p99_ms_at_${PACED_RPS}rps`]: round(directPaced.p99),
        [`gateway_p99_ms_at_${PACED_RPS}rps`]: round(gatewayPaced.p99),
        [`added_p99_ms_at_${PACED_RPS}rps`]: round(gatewayPaced.p99 - directPaced.p99),
        saturated_direct_p50_ms: round(directRun.p50),
        saturated_gateway_p50_ms: round(gatewayRun.p50)
      })
    }
    await stopGateway(gateway)

    // Guardrails: the scan alone, and the standard chat request's CPU with [security] on against off.
    guardrails = await runGuardrailBench()
    const offCpu = results[0].gateway_cpu_us_per_request as number
    const secured = await startGateway("gateway-security", `
[security]
enabled = true
output_guardrails = true
blocklist = [${Array.from({ length: 1000 }, (_, i) => `"blocked-term-${i}"`).join(", ")}]
`)
    const nonStream = scenarios[0].viaGateway
    const securedScenario = { ...nonStream, origin: secured.url }
    await closedLoop(poolFor(secured.url), securedScenario, WARMUP)
    const cpuBefore = cpuMicros(secured.child.pid!)
    const securedRun = await closedLoop(poolFor(secured.url), securedScenario, REQUESTS)
    const onCpu = (cpuMicros(secured.child.pid!) - cpuBefore) / securedRun.requests
    await stopGateway(secured)
    guardrails.gateway_cpu_us_per_request_security_off = offCpu
    guardrails.gateway_cpu_us_per_request_security_on = Math.round(onCpu)
    guardrails.security_cpu_ratio = Math.round((onCpu / offCpu) * 100) / 100

    // The cache: every request the same, so all but the first are hits (a local Redis, database 9).
    const cached = await startGateway("gateway-cache", `
[cache]
enabled = true
url = "${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/9"
default_mode = "always"
encrypt_salt = "bench"
ttl_seconds = 120
`)
    const cachedScenario = { ...nonStream, origin: cached.url }
    // Misses: every body distinct (a lookup that finds nothing, the upstream call, the store).
    const run = `${process.pid}-${Date.now()}`
    const missScenario = { ...cachedScenario, bodyFor: (n: number) => JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: `hello ${run} ${n}` }] }) }
    await closedLoop(poolFor(cached.url), missScenario, WARMUP)
    const missCpuBefore = cpuMicros(cached.child.pid!)
    const misses = await closedLoop(poolFor(cached.url), missScenario, REQUESTS)
    const missCpu = (cpuMicros(cached.child.pid!) - missCpuBefore) / misses.requests
    // Hits: every request the same.
    await closedLoop(poolFor(cached.url), cachedScenario, WARMUP)
    const hitCpuBefore = cpuMicros(cached.child.pid!)
    const hits = await closedLoop(poolFor(cached.url), cachedScenario, REQUESTS)
    const hitCpu = (cpuMicros(cached.child.pid!) - hitCpuBefore) / hits.requests
    await stopGateway(cached)
    cache = {
      direct_rps: results[0].direct_rps as number,
      uncached_rps: results[0].gateway_rps as number,
      miss_rps: Math.round(misses.rps),
      hit_rps: Math.round(hits.rps),
      uncached_cpu_us_per_request: offCpu,
      miss_cpu_us_per_request: Math.round(missCpu),
      hit_cpu_us_per_request: Math.round(hitCpu),
      hit_p50_ms: round(hits.p50)
    }

    // Telemetry: both sections at ratio 1.0, and the defaults (application 0.1, GenAI 1.0), exporting
    // to an OTLP receiver in its own process, against the same gateway with telemetry off.
    const receiver = await startReceiver(dir)
    try {
      const measure = async (name: string, telemetryTable: string, extra = "") => {
        const running = await startGateway(name, extra, telemetryTable)
        const scenario = { ...nonStream, origin: running.url }
        await closedLoop(poolFor(running.url), scenario, WARMUP)
        const before = cpuMicros(running.child.pid!)
        const run = await closedLoop(poolFor(running.url), scenario, REQUESTS)
        const cpu = (cpuMicros(running.child.pid!) - before) / run.requests
        await stopGateway(running)
        return { rps: run.rps, cpu }
      }
      const genai = (ratio: number) => `[genai_telemetry]
enabled = true
otlp_endpoint = "${receiver.url}"
sample_ratio = ${ratio}
metrics_export_interval_secs = 5
metrics_export_timeout_secs = 5`
      const off = await measure("gateway-telemetry-off", "[telemetry]\nenabled = false")
      const full = await measure("gateway-telemetry-full", `[telemetry]\nenabled = true\notlp_endpoint = "${receiver.url}"\nsample_ratio = 1.0`, genai(1))
      const defaults = await measure("gateway-telemetry-defaults", `[telemetry]\nenabled = true\notlp_endpoint = "${receiver.url}"\nsample_ratio = 0.1`, genai(1))
      telemetry = {
        off_rps: Math.round(off.rps),
        all_at_1_rps: Math.round(full.rps),
        defaults_rps: Math.round(defaults.rps),
        all_at_1_throughput_ratio: Math.round((full.rps / off.rps) * 100) / 100,
        defaults_throughput_ratio: Math.round((defaults.rps / off.rps) * 100) / 100,
        off_cpu_us_per_request: Math.round(off.cpu),
        all_at_1_cpu_us_per_request: Math.round(full.cpu),
        defaults_cpu_us_per_request: Math.round(defaults.cpu)
      }
    } finally {
      receiver.child.kill("SIGTERM")
    }

    // Tenant mode: one project's snapshot in Redis (database 9), a warm LRU, against the static file.
    const redisUrl = `${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/9`
    const redis = new Redis(redisUrl)
    const project = `bench-${process.pid}`
    try {
      await redis.set(`gw:routing:${project}:production`, JSON.stringify({ version: 1, providers: { openai: { kind: "openai", base_url: `${upstreamUrl}/v1`, models: ["gpt-4o"], credential: "none" } } }))
      await redis.sadd(`gw:routing:${project}:envs`, "production")
      const tenant = await startGateway("gateway-tenant", `[tenant_routing]\nenabled = true\nredis_url = "${redisUrl}"`)
      const tenantScenario = { ...nonStream, origin: tenant.url, headers: { ...nonStream.headers, "x-gw-project-id": project } }
      await closedLoop(poolFor(tenant.url), tenantScenario, WARMUP)
      const before = cpuMicros(tenant.child.pid!)
      const run = await closedLoop(poolFor(tenant.url), tenantScenario, REQUESTS)
      const tenantCpu = (cpuMicros(tenant.child.pid!) - before) / run.requests
      await stopGateway(tenant)
      const store = await runTenancyBench()
      tenancy = {
        static_cpu_us_per_request: offCpu,
        tenant_cpu_us_per_request: Math.round(tenantCpu),
        tenant_cpu_ratio: Math.round((tenantCpu / offCpu) * 100) / 100,
        tenant_rps: Math.round(run.rps),
        warm_resolve_ns: Math.round(store.warmResolveNs),
        cold_load_us: Math.round(store.coldLoadUs),
        rss_mib_lru_full: store.memoryMiB.lruFull.rss,
        rss_mib_after_10k_projects: store.memoryMiB.afterOnePass.rss,
        rss_mib_after_20k_loads: store.memoryMiB.afterTwoPasses.rss
      }
    } finally {
      await redis.del(`gw:routing:${project}:production`, `gw:routing:${project}:envs`)
      redis.disconnect()
    }
  } finally {
    for (const pool of pools.values()) await pool.close()
    gateway.child.kill("SIGTERM")
    upstream.child.kill("SIGTERM")
  }
  console.table(results)
  console.table(guardrails)
  console.table(cache)
  console.table(telemetry)
  console.table(tenancy)
  const out = { date: new Date().toISOString(), requests: REQUESTS, concurrency: CONCURRENCY, node: process.version, pinned: PIN, results, guardrails, cache, telemetry, tenancy }
  writeFileSync(join(root, "bench", "results.json"), `${JSON.stringify(out, null, 2)}\n`)
  console.log("written bench/results.json")
}

const round = (value: number) => Math.round(value * 1000) / 1000

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
