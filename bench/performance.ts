/**
 * The performance figures of `npm run bench` (issue 14), for the gateway as
 * `npm start` runs it (the production bundle, its Node flags and
 * environment) beside a direct call to the same fake upstream:
 *
 * - added latency (p50, p99) and CPU per request at a constant 500 req/s;
 * - CPU per request and requests/s at full load (JSON and streams);
 * - resident memory idle, with 1,000 open streams, and at its peak;
 * - a burst at full load, then 100 req/s: the median latency of each second;
 * - workers: requests/s and CPU per request with 1 and 2 worker processes.
 *
 * `node bench/performance.ts [--quick] [--only burst,memory,…]` runs it alone.
 */
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { closedLoop, memoryMiB, oneRequest, pacedLoop, Pools, round, served, sleep, startProcess, stopProcess, withCpu } from "./lib.ts"
import type { Scenario } from "./lib.ts"

/**
 * How `npm start` runs the gateway (package.json): keep the two the same.
 * `BENCH_NODE_FLAGS` / `BENCH_MALLOC_ARENA_MAX` / `BENCH_MALLOC_MMAP_THRESHOLD` try others.
 */
export const START_NODE_FLAGS = process.env.BENCH_NODE_FLAGS?.split(" ").filter((flag) => flag !== "") ?? ["--max-semi-space-size=4", "--heap-growing-percent=25"]
const MMAP_THRESHOLD = process.env.BENCH_MALLOC_MMAP_THRESHOLD ?? "32768"
export const START_ENV: Record<string, string> = {
  MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? "2",
  // `BENCH_MALLOC_MMAP_THRESHOLD=` (empty): glibc's own, a threshold that rises with the buffers freed.
  ...(MMAP_THRESHOLD === "" ? {} : { MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD })
}

export interface Gateway {
  readonly child: ChildProcess
  readonly url: string
}

export interface GatewayOptions {
  /** TOML added to the configuration (after the provider). */
  readonly extra?: string | undefined
  /** Replaces the `[telemetry]` table (off, logs at info). */
  readonly telemetry?: string | undefined
  /** Keys added to the `[server]` table. */
  readonly server?: string | undefined
  /** Run src/main.ts instead of the bundle. */
  readonly source?: boolean
  /** The core(s) it is pinned to ("0" by default). */
  readonly cpu?: string | undefined
  /** Another bundle (a path relative to the checkout) than dist/gateway.mjs. */
  readonly entry?: string | undefined
  /** Environment added to the gateway's (credentials a configuration names, a gateway key). */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Node flags instead of `npm start`'s. */
  readonly nodeFlags?: ReadonlyArray<string> | undefined
  /** A command that runs Node (bench/instructions.ts: callgrind). */
  readonly wrap?: ReadonlyArray<string> | undefined
}

/** Starts a gateway with the base configuration (one OpenAI provider at `upstream`, logs at info) and `options`. */
export const startGateway = async (dir: string, name: string, upstream: string, options: GatewayOptions = {}): Promise<Gateway> => {
  const configPath = join(dir, `${name}.toml`)
  writeFileSync(configPath, `[server]
host = "127.0.0.1"
port = 0
${options.server ?? ""}

[providers.openai]
base_url = "${upstream}/v1"
models = ["gpt-4o"]
credential = "none"

${options.telemetry ?? "[telemetry]\nenabled = false\nlog_level = \"info\""}
${options.extra ?? ""}`)
  const entry = options.source === true ? "src/main.ts" : options.entry ?? "dist/gateway.mjs"
  const started = await startProcess([entry, "serve", "--config", configPath], options.cpu ?? "0", dir, name, {
    ready: (line) => line.includes("\"port\""),
    node: options.nodeFlags ?? (options.source === true ? [] : START_NODE_FLAGS),
    env: { ...(options.source === true ? {} : START_ENV), ...options.env },
    ...(options.wrap === undefined ? {} : { wrap: options.wrap })
  })
  return { child: started.child, url: `http://127.0.0.1:${JSON.parse(started.line).port as number}` }
}

export const twentyWords = Array.from({ length: 18 }, (_, i) => `word${i}`).join(" ")
export const chatBody = (stream: boolean) => JSON.stringify({ model: "gpt-4o", stream, messages: [{ role: "user", content: stream ? twentyWords : "hello" }] })
export const jsonHeaders = { "content-type": "application/json", authorization: "Bearer bench" }
export const chatScenario = (name: string, origin: string, stream: boolean, headers: Readonly<Record<string, string>> = {}): Scenario => ({
  name,
  origin,
  path: "/v1/chat/completions",
  body: chatBody(stream),
  headers: { ...jsonHeaders, ...headers }
})

export interface PerformanceContext {
  readonly dir: string
  readonly pools: Pools
  /** The fake upstream (no delay). */
  readonly upstream: string
  /** A fake upstream that waits between stream chunks (open streams last seconds). */
  readonly slowUpstream: string
  readonly quick: boolean
}

const REQUESTS = (ctx: PerformanceContext) => (ctx.quick ? 3_000 : 15_000)
const PACED_SECONDS = (ctx: PerformanceContext) => (ctx.quick ? 2 : 6)
const CONCURRENCY = 32

/**
 * Added latency and CPU per request at a constant 500 req/s, and CPU per
 * request and requests/s at full load, JSON and stream, for the direct call,
 * the bare Node hop and the gateway. `pids` are the processes whose CPU is
 * counted (none for the direct call: the upstream's CPU is not the proxy's).
 */
export const latencyAndCpu = async (ctx: PerformanceContext, targets: ReadonlyArray<{ readonly label: string; readonly url: string; readonly pid?: number }>) => {
  const rows: Array<Record<string, unknown>> = []
  for (const { label, url, pid } of targets) {
    const pool = ctx.pools.for(url)
    const json = chatScenario(label, url, false)
    const stream = chatScenario(label, url, true)
    await closedLoop(pool, json, REQUESTS(ctx) / 5, CONCURRENCY)
    await closedLoop(pool, stream, REQUESTS(ctx) / 5, CONCURRENCY)
    const cpu = async <A>(run: () => Promise<A>, requests: (a: A) => number) =>
      pid === undefined ? { result: await run(), cpuPerRequest: undefined } : withCpu(pid, run, requests)
    const paced = await cpu(() => pacedLoop(pool, json, 500, PACED_SECONDS(ctx)), () => 500 * PACED_SECONDS(ctx))
    const fullJson = await cpu(() => closedLoop(pool, json, REQUESTS(ctx), CONCURRENCY), served)
    const fullStream = await cpu(() => closedLoop(pool, stream, REQUESTS(ctx), CONCURRENCY), served)
    rows.push({
      target: label,
      p50_ms_at_500rps: round(paced.result.p50),
      p99_ms_at_500rps: round(paced.result.p99),
      cpu_us_per_request_at_500rps: paced.cpuPerRequest,
      max_rps_json: Math.round(fullJson.result.rps),
      max_rps_stream: Math.round(fullStream.result.rps),
      cpu_us_per_request_full_json: fullJson.cpuPerRequest,
      cpu_us_per_request_full_stream: fullStream.cpuPerRequest
    })
  }
  const direct = rows[0]
  for (const row of rows.slice(1)) {
    row.added_p50_ms_at_500rps = round((row.p50_ms_at_500rps as number) - (direct.p50_ms_at_500rps as number))
    row.added_p99_ms_at_500rps = round((row.p99_ms_at_500rps as number) - (direct.p99_ms_at_500rps as number))
  }
  return rows
}

/**
 * Burst, then low rate: `burstSeconds` of streams at full load (closed loop,
 * concurrency 64), then 100 req/s of JSON, three rounds. Reports the median
 * of each second of the low-rate run and the rate achieved: a slow spell
 * after the burst shows as high medians in the first seconds.
 */
export const burstThenLowRate = async (ctx: PerformanceContext, gateway: Gateway) => {
  const burstSeconds = ctx.quick ? 2 : 5
  const lowSeconds = ctx.quick ? 3 : 5
  const rows: Array<Record<string, unknown>> = []
  for (let round_ = 1; round_ <= 3; round_++) {
    for (const [target, origin] of [["direct", ctx.upstream], ["gateway", gateway.url]] as const) {
      const pool = ctx.pools.for(origin)
      const burst = await closedLoop(pool, chatScenario(target, origin, true), 1_000_000, 64, burstSeconds)
      const low = await pacedLoop(pool, chatScenario(target, origin, false), 100, lowSeconds)
      rows.push({
        round: round_,
        target,
        burst_rps: Math.round(burst.rps),
        low_p50_ms: round(low.p50),
        low_p99_ms: round(low.p99),
        low_achieved_rps: round(low.achievedRps, 1),
        low_p50_ms_each_second: low.p50BySecond.join(" ")
      })
    }
  }
  return rows
}

/**
 * Resident memory of a fresh gateway: idle, then with `streams` streams open
 * at once through the slow upstream (sampled while all are open), then its
 * peak (VmHWM) after full load and the streams.
 */
export const memory = async (ctx: PerformanceContext, streams: number) => {
  const gateway = await startGateway(ctx.dir, "gateway-memory", ctx.slowUpstream)
  try {
    const pid = gateway.child.pid!
    await sleep(1000)
    const idle = memoryMiB(pid).rss
    const pool = ctx.pools.for(gateway.url)
    await closedLoop(pool, chatScenario("gateway", gateway.url, false), REQUESTS(ctx), CONCURRENCY)
    await sleep(1000)
    const afterLoad = memoryMiB(pid).rss
    const { Pool } = await import("undici")
    const many = new Pool(gateway.url, { connections: streams })
    let withStreams = afterLoad
    try {
      const scenario = chatScenario("gateway", gateway.url, true)
      const all = Array.from({ length: streams }, () => oneRequest(many, scenario))
      // Every stream lasts ~2 s (20 chunks, 100 ms apart): sample while they are open.
      for (let i = 0; i < 15; i++) {
        await sleep(100)
        withStreams = Math.max(withStreams, memoryMiB(pid).rss)
      }
      await Promise.all(all)
    } finally {
      await many.destroy()
    }
    return {
      rss_idle_mib: idle,
      rss_after_full_load_mib: afterLoad,
      [`rss_with_${streams}_open_streams_mib`]: withStreams,
      kib_per_open_stream: Math.round(((withStreams - afterLoad) * 1024) / streams),
      rss_peak_mib: memoryMiB(pid).peak
    }
  } finally {
    await ctx.pools.forget(gateway.url)
    await stopProcess(gateway.child)
  }
}

/**
 * Workers. A two-core machine cannot show 2× requests/s outright: the load
 * generator and the upstream need the same cores. So each configuration runs
 * at full load (concurrency 64) and reports requests/s, the CPU per request
 * summed over every gateway process (the primary included) and the cores the
 * gateway used (its share of the machine); requests/s per gateway core is
 * what a dedicated core buys.
 *
 * - 1 worker on core 0;
 * - 2 workers both on core 0: the same core's requests/s with a second
 *   process (what the cluster itself costs);
 * - 2 workers on cores 0 and 1, sharing them with the load generator.
 *
 * projected scaling = 2 × (requests/s per core, 2 workers) / (requests/s per core, 1 worker).
 */
export const workersScaling = async (ctx: PerformanceContext) => {
  const rows: Array<Record<string, unknown>> = []
  const perCore: Record<string, number> = {}
  for (const [label, workers, cpu] of [["1 worker, core 0", 1, "0"], ["2 workers, core 0", 2, "0"], ["2 workers, cores 0-1", 2, "0,1"]] as const) {
    const gateway = await startGateway(ctx.dir, `gateway-workers-${workers}-${cpu}`, ctx.upstream, { server: `workers = ${workers}`, cpu })
    try {
      const pool = ctx.pools.for(gateway.url)
      const json = chatScenario("gateway", gateway.url, false)
      await closedLoop(pool, json, REQUESTS(ctx) / 3, 64)
      const { result: run, cpuPerRequest } = await withCpu(gateway.child.pid!, () => closedLoop(pool, json, REQUESTS(ctx), 64), served, true)
      // CPU seconds per second: requests/s × CPU per request.
      const cores = (run.rps * cpuPerRequest) / 1e6
      perCore[label] = run.rps / cores
      rows.push({
        gateway: label,
        rps: Math.round(run.rps),
        cpu_us_per_request: cpuPerRequest,
        gateway_cores_used: round(cores, 2),
        rps_per_gateway_core: Math.round(run.rps / cores)
      })
    } finally {
      await ctx.pools.forget(gateway.url)
      await stopProcess(gateway.child)
    }
  }
  rows.push({
    gateway: "projected scaling, 2 workers vs 1",
    rps: round((2 * perCore["2 workers, cores 0-1"]) / perCore["1 worker, core 0"], 2),
    rps_per_gateway_core: round(perCore["2 workers, core 0"] / perCore["1 worker, core 0"], 2)
  })
  return rows
}

export interface PerformanceResult {
  readonly latencyAndCpu: ReadonlyArray<Record<string, unknown>>
  readonly memory: Record<string, number>
  readonly burst: ReadonlyArray<Record<string, unknown>>
  readonly workers: ReadonlyArray<Record<string, unknown>>
}

/** Every figure of issue 14 in one run. `only` picks sections (latency, memory, burst, workers). */
export const runPerformanceBench = async (options: { readonly quick: boolean; readonly only?: ReadonlySet<string> | undefined }): Promise<PerformanceResult> => {
  const wanted = (name: string) => options.only === undefined || options.only.has(name)
  const dir = mkdtempSync(join(tmpdir(), "gateway-perf-"))
  const upstream = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], "1", dir, "upstream")
  const slow = await startProcess(["test/fixtures/serve.ts", "--kind", "openai", "--chunk-delay-ms", "100"], "1", dir, "upstream-slow")
  const ctx: PerformanceContext = {
    dir,
    pools: new Pools(64),
    upstream: JSON.parse(upstream.line).url as string,
    slowUpstream: JSON.parse(slow.line).url as string,
    quick: options.quick
  }
  const result: { -readonly [K in keyof PerformanceResult]: PerformanceResult[K] } = { latencyAndCpu: [], memory: {}, burst: [], workers: [] }
  try {
    if (wanted("latency") || wanted("burst")) {
      const hop = await startProcess(["bench/node-hop.ts", ctx.upstream], "0", dir, "node-hop")
      const gateway = await startGateway(dir, "gateway-performance", ctx.upstream)
      try {
        if (wanted("latency")) {
          result.latencyAndCpu = await latencyAndCpu(ctx, [
            { label: "direct", url: ctx.upstream },
            { label: "node hop", url: `http://127.0.0.1:${JSON.parse(hop.line).port as number}`, pid: hop.child.pid! },
            { label: "gateway", url: gateway.url, pid: gateway.child.pid! }
          ])
        }
        if (wanted("burst")) result.burst = await burstThenLowRate(ctx, gateway)
      } finally {
        await stopProcess(hop.child)
        await ctx.pools.forget(gateway.url)
        await stopProcess(gateway.child)
      }
    }
    if (wanted("memory")) result.memory = await memory(ctx, 1000)
    if (wanted("workers")) result.workers = await workersScaling(ctx)
  } finally {
    await ctx.pools.close()
    await stopProcess(upstream.child)
    await stopProcess(slow.child)
  }
  return result
}

export const printPerformance = (result: PerformanceResult): void => {
  if (result.latencyAndCpu.length > 0) console.table(result.latencyAndCpu)
  if (Object.keys(result.memory).length > 0) console.table(result.memory)
  if (result.burst.length > 0) console.table(result.burst)
  if (result.workers.length > 0) console.table(result.workers)
}

if (import.meta.main) {
  const at = process.argv.indexOf("--only")
  const result = await runPerformanceBench({
    quick: process.argv.includes("--quick"),
    only: at === -1 ? undefined : new Set(process.argv[at + 1].split(","))
  })
  printPerformance(result)
  process.exit(0)
}
