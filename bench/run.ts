/**
 * `npm run bench`: the gateway against a direct call to the same fake
 * upstream, in one run. The fake upstream and the gateway each run in their
 * own process; this process generates load over loopback. The gateway is the
 * production bundle run as `npm start` runs it (built first). Method and how
 * to read the tables: bench/README.md.
 *
 * Scenarios: fast path non-stream (the baseline of the stage tables below)
 * and normalized stream (Anthropic caller → OpenAI upstream). For each:
 * requests/s and latency at fixed concurrency, latency at a paced
 * 500 requests/s, and the gateway's CPU time per proxied request (from /proc,
 * user + system). The fast path, JSON and stream, beside the bare Node hop is
 * bench/performance.ts's hop table (interleaved rounds).
 * Then each stage's cost (guardrails, cache, telemetry, tenant mode), the
 * CPU of Gemini and Bedrock targets beside OpenAI's (bench/clouds.ts), and the
 * performance figures of bench/performance.ts (issue 29's table: the gateway
 * beside a bare Node hop in interleaved rounds, CPU per request at full load
 * and at 500 req/s, added p50, max req/s, each with its ratio and goal; the
 * memory flags' trade, `npm start`'s flags against Node's defaults, with
 * 1,000 open streams; a burst then a low rate; workers), memory after a burst
 * of 10 MB bodies (bench/body-burst.ts), and the working tree beside the build
 * before issue 29's work (`BASE_REF`, or `--base REF`), two builds side by side
 * as `--compare` measures them (bench/compare.ts).
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { spawnSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Redis } from "ioredis"
import { runBodyBurstBench } from "./body-burst.ts"
import type { BodyBurstRow } from "./body-burst.ts"
import { runCloudsBench } from "./clouds.ts"
import { compareMain, compareOptionsFrom, printCompare, runCompare } from "./compare.ts"
import { runGuardrailBench } from "./guardrail.ts"
import { closedLoop as closedLoopAt, pacedLoop as pacedLoopAt, PIN, Pools, root, round, served, startProcess, stopProcess, withCpu } from "./lib.ts"
import type { Pool } from "undici"
import type { Scenario } from "./lib.ts"
import { chatBody, jsonHeaders, printPerformance, runPerformanceBench, startGateway as startGatewayIn, twentyWords } from "./performance.ts"
import type { PerformanceResult } from "./performance.ts"
import { runTelemetryThroughput } from "./telemetry.ts"
import { runTenancyBench } from "./tenancy.ts"

const QUICK = process.argv.includes("--quick")
/**
 * The build before issue 29's work (performance: within 1.3× of a bare Node hop), the base of the
 * default run's two builds side by side. `--base REF` measures against another.
 */
const BASE_REF = "4914e2f"
const REQUESTS = QUICK ? 2_000 : 10_000
const WARMUP = QUICK ? 500 : 2_000
const CONCURRENCY = 32
const PACED_RPS = 500
const PACED_SECONDS = QUICK ? 2 : 6

const closedLoop = (pool: Pool, scenario: Scenario, count: number) => closedLoopAt(pool, scenario, count, CONCURRENCY)
const pacedLoop = (pool: Pool, scenario: Scenario) => pacedLoopAt(pool, scenario, PACED_RPS, PACED_SECONDS)

const main = async () => {
  // The gateway runs as `npm start` runs it: the production bundle.
  const built = spawnSync(process.execPath, ["scripts/build.ts"], { cwd: root, stdio: "inherit" })
  if (built.status !== 0) throw new Error("npm run build failed")
  const dir = mkdtempSync(join(tmpdir(), "gateway-bench-"))
  const upstream = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], "1", dir, "upstream")
  const upstreamUrl = JSON.parse(upstream.line).url as string
  /** A gateway on core 0 with the base configuration plus `extra` TOML (`telemetry` replaces the [telemetry] table). */
  const startGateway = (name: string, extra = "", telemetry?: string) => startGatewayIn(dir, name, upstreamUrl, { extra, telemetry })
  const gateway = await startGateway("gateway")
  const gatewayUrl = gateway.url
  const scenarios: Array<{ label: string; direct: Scenario; viaGateway: Scenario }> = [
    {
      label: "fast path, non-stream",
      direct: { name: "direct", origin: upstreamUrl, path: "/v1/chat/completions", body: chatBody(false), headers: jsonHeaders },
      viaGateway: { name: "gateway", origin: gatewayUrl, path: "/v1/chat/completions", body: chatBody(false), headers: jsonHeaders }
    },
    {
      label: "normalized stream (anthropic caller → openai)",
      direct: { name: "direct", origin: upstreamUrl, path: "/v1/chat/completions", body: chatBody(true), headers: jsonHeaders },
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
  let telemetry: Record<string, number | string> = {}
  let tenancy: Record<string, unknown> = {}
  let clouds: Array<Record<string, unknown>> = []
  let performance: PerformanceResult | undefined
  let bodyBurst: ReadonlyArray<BodyBurstRow> = []
  let compare: Awaited<ReturnType<typeof runCompare>> | undefined
  const pools = new Pools(CONCURRENCY * 2)
  const poolFor = (origin: string) => pools.for(origin)
  /** Stops a gateway and forgets its connections (a later gateway may get the same port). */
  const stopGateway = async (running: { readonly child: ChildProcess; readonly url: string }) => {
    await pools.forget(running.url)
    await stopProcess(running.child)
  }
  /** Warms `scenario` up, then runs it at full load, counting the CPU `running` spent per request. */
  const measured = async (running: { readonly child: ChildProcess }, scenario: Scenario) => {
    await closedLoop(poolFor(scenario.origin), scenario, WARMUP)
    const { result, cpuPerRequest } = await withCpu(running.child.pid!, () => closedLoop(poolFor(scenario.origin), scenario, REQUESTS), served)
    return { ...result, cpu: cpuPerRequest }
  }
  try {
    for (const { label, direct, viaGateway } of scenarios) {
      await closedLoop(poolFor(direct.origin), direct, WARMUP)
      await closedLoop(poolFor(viaGateway.origin), viaGateway, WARMUP)
      const directRun = await closedLoop(poolFor(direct.origin), direct, REQUESTS)
      const { result: gatewayRun, cpuPerRequest } = await withCpu(gateway.child.pid!, () => closedLoop(poolFor(viaGateway.origin), viaGateway, REQUESTS), served)
      const directPaced = await pacedLoop(poolFor(direct.origin), direct)
      const gatewayPaced = await pacedLoop(poolFor(viaGateway.origin), viaGateway)
      results.push({
        scenario: label,
        direct_rps: Math.round(directRun.rps),
        gateway_rps: Math.round(gatewayRun.rps),
        gateway_cpu_us_per_request: cpuPerRequest,
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
    const onCpu = (await measured(secured, { ...nonStream, origin: secured.url })).cpu
    await stopGateway(secured)
    guardrails.gateway_cpu_us_per_request_security_off = offCpu
    guardrails.gateway_cpu_us_per_request_security_on = onCpu
    guardrails.security_cpu_ratio = round(onCpu / offCpu, 2)

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
    const misses = await measured(cached, missScenario)
    // Hits: every request the same.
    const hits = await measured(cached, cachedScenario)
    await stopGateway(cached)
    cache = {
      direct_rps: results[0].direct_rps as number,
      uncached_rps: results[0].gateway_rps as number,
      miss_rps: Math.round(misses.rps),
      hit_rps: Math.round(hits.rps),
      uncached_cpu_us_per_request: offCpu,
      miss_cpu_us_per_request: misses.cpu,
      hit_cpu_us_per_request: hits.cpu,
      hit_p50_ms: round(hits.p50)
    }

    // Telemetry: the spec's defaults (application traces at 0.1, GenAI off) and everything at 1.0, exporting
    // to an OTLP receiver in its own process, against the same gateway with telemetry off.
    telemetry = await runTelemetryThroughput({ dir, upstreamUrl, pools, requests: REQUESTS, concurrency: CONCURRENCY, rounds: QUICK ? 1 : 3 })

    // Tenant mode: one project's snapshot in Redis (database 9), a warm LRU, against the static file.
    const redisUrl = `${process.env.REDIS_URL ?? "redis://127.0.0.1:6379"}/9`
    const redis = new Redis(redisUrl)
    const project = `bench-${process.pid}`
    try {
      await redis.set(`gw:routing:${project}:production`, JSON.stringify({ version: 1, providers: { openai: { kind: "openai", base_url: `${upstreamUrl}/v1`, models: ["gpt-4o"], credential: "none" } } }))
      await redis.sadd(`gw:routing:${project}:envs`, "production")
      const tenant = await startGateway("gateway-tenant", `[tenant_routing]\nenabled = true\nredis_url = "${redisUrl}"`)
      const run = await measured(tenant, { ...nonStream, origin: tenant.url, headers: { ...nonStream.headers, "x-gw-project-id": project } })
      await stopGateway(tenant)
      const store = await runTenancyBench()
      tenancy = {
        static_cpu_us_per_request: offCpu,
        tenant_cpu_us_per_request: run.cpu,
        tenant_cpu_ratio: round(run.cpu / offCpu, 2),
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
    // Issues 14 and 29: the gateway beside a bare Node hop, the memory flags' trade, burst, workers (bench/performance.ts).
    await stopProcess(upstream.child)
    // Gemini and Bedrock targets beside OpenAI's, and SigV4 signing's cost.
    clouds = await runCloudsBench(QUICK)
    performance = await runPerformanceBench({ quick: QUICK })
    // Memory after a burst of 10 MB bodies (bench/body-burst.ts).
    bodyBurst = await runBodyBurstBench({ quick: QUICK, built: true })
    // The working tree beside the build before issue 29's work, as `--compare` measures them.
    compare = await runCompare(baseCompareOptions(process.argv))
  } finally {
    await pools.close()
    gateway.child.kill("SIGTERM")
    upstream.child.kill("SIGTERM")
  }
  console.table(results)
  console.table(guardrails)
  console.table(cache)
  console.table(telemetry)
  console.table(tenancy)
  console.table(clouds)
  if (performance !== undefined) printPerformance(performance)
  console.table(bodyBurst)
  if (compare !== undefined) printCompare(compare)
  const out = { date: new Date().toISOString(), requests: REQUESTS, concurrency: CONCURRENCY, node: process.version, pinned: PIN, results, guardrails, cache, telemetry, tenancy, clouds, performance, bodyBurst, compare }
  writeFileSync(join(root, "bench", "results.json"), `${JSON.stringify(out, null, 2)}\n`)
  console.log("written bench/results.json")
}

/** The default run's comparison: `--base REF` (default `BASE_REF`) against the working tree, `--rounds` and `--quick` as `--compare` reads them. */
const baseCompareArgs = (argv: ReadonlyArray<string>): Array<string> => {
  const at = argv.indexOf("--base")
  return [at === -1 ? BASE_REF : argv[at + 1], ...argv.slice(2).filter((_, i) => at === -1 || (i + 2 !== at && i + 2 !== at + 1))]
}
const baseCompareOptions = (argv: ReadonlyArray<string>) => compareOptionsFrom(["--compare", ...baseCompareArgs(argv)])

/** `--only-base`: that section alone, as `--compare REF` runs it (printed, and written to bench/compare.json). */
const baseOnly = () => compareMain(["--compare", ...baseCompareArgs(process.argv)])

const entry = process.argv.includes("--compare") ? () => compareMain(process.argv) : process.argv.includes("--only-base") ? baseOnly : main
entry().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
