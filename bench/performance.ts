/**
 * The performance figures of `npm run bench` (issues 14 and 29), for the
 * gateway as `npm start` runs it (the production bundle, its Node flags and
 * environment), each measured in interleaved rounds (medians) so a slow spell
 * of the machine does not land on one side alone:
 *
 * - hop: the gateway beside the bare Node hop (bench/node-hop.ts) and a direct
 *   call, on the same fake upstream: CPU per request at full load and at
 *   500 req/s, added p50 at 500 req/s, max req/s (JSON and stream), each with
 *   the ratio gateway ÷ hop and issue 29's goal, and the floor beside them (the
 *   hop plus the least the specification asks of any gateway: `--floor`);
 * - memory: the memory flags' trade, the same bundle with `npm start`'s flags
 *   and with Node's defaults: CPU per request at full load, resident memory
 *   idle, after full load, with 1,000 open streams, and at its peak;
 * - burst: full load, then 100 req/s: the median latency of each second;
 * - workers: requests/s and CPU per request with 1 and 2 worker processes,
 *   and each worker's CPU per request against a single process's.
 *
 * `node bench/performance.ts [--quick] [--only hop,memory,burst,workers]` runs it alone.
 * Bounded: every loop has a request count and a deadline.
 */
import type { ChildProcess } from "node:child_process"
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, readSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"
import { closedLoop, cpuMicros, interleavedRounds, median, memoryKiB, memoryMiB, oneRequest, pacedLoop, Pools, round, served, sleep, startProcess, stopProcess, withCpu } from "./lib.ts"
import type { RoundFigures, Scenario } from "./lib.ts"

/**
 * How `npm start` runs the gateway (package.json): keep the two the same.
 * `BENCH_NODE_FLAGS` / `BENCH_MALLOC_ARENA_MAX` / `BENCH_MALLOC_MMAP_THRESHOLD` try others.
 */
export const START_NODE_FLAGS = process.env.BENCH_NODE_FLAGS?.split(" ").filter((flag) => flag !== "") ?? ["--max-semi-space-size=4", "--heap-growing-percent=25", "--no-allocation-site-pretenuring"]
const MMAP_THRESHOLD = process.env.BENCH_MALLOC_MMAP_THRESHOLD ?? "32768"
export const START_ENV: Record<string, string> = {
  MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? "2",
  // `BENCH_MALLOC_MMAP_THRESHOLD=` (empty): glibc's own, a threshold that rises with the buffers freed.
  ...(MMAP_THRESHOLD === "" ? {} : { MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD })
}

export interface Gateway {
  readonly child: ChildProcess
  readonly url: string
  /** The file its stdout (the log) goes to. */
  readonly log: string
}

export interface GatewayOptions {
  /** TOML added to the configuration (after the provider). */
  readonly extra?: string | undefined
  /** Keys added to the provider's table (`responses_api = false`: a Responses caller is translated to chat). */
  readonly provider?: string | undefined
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
  /** Node's defaults instead of `npm start`'s flags and environment: no Node flags, no `MALLOC_ARENA_MAX`. */
  readonly nodeDefaults?: boolean | undefined
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
${options.provider ?? ""}

${options.telemetry ?? "[telemetry]\nenabled = false\nlog_level = \"info\""}
${options.extra ?? ""}`)
  const entry = options.source === true ? "src/main.ts" : options.entry ?? "dist/gateway.mjs"
  const startFlags = options.source !== true && options.nodeDefaults !== true
  const started = await startProcess([entry, "serve", "--config", configPath], options.cpu ?? "0", dir, name, {
    ready: (line) => line.includes("\"port\""),
    node: options.nodeFlags ?? (startFlags ? START_NODE_FLAGS : []),
    env: { ...(startFlags ? START_ENV : {}), ...options.env },
    ...(options.wrap === undefined ? {} : { wrap: options.wrap })
  })
  return { child: started.child, url: `http://127.0.0.1:${JSON.parse(started.line).port as number}`, log: started.log }
}

/**
 * The `[telemetry]` / `[genai_telemetry]` sections of the spec's defaults (application traces at 0.1,
 * GenAI off) or of everything at 1.0 (GenAI with content capture and metrics), exporting to `receiverUrl`;
 * `exportDelayMs` sets `export_delay_ms` (the default, 1 s, when not given).
 */
export const telemetrySections = (which: "defaults" | "all" | "none" | "trace", receiverUrl: string, exportDelayMs?: number): string => {
  const delay = exportDelayMs === undefined ? "" : `\nexport_delay_ms = ${exportDelayMs}`
  const ratio = which === "all" || which === "trace" ? "1.0" : which === "none" ? "0.0" : "0.1"
  const app = `[telemetry]\nenabled = true\notlp_endpoint = "${receiverUrl}"\nsample_ratio = ${ratio}\nlog_level = "info"${delay}`
  if (which !== "all") return app
  return `${app}\n\n[genai_telemetry]\nenabled = true\notlp_endpoint = "${receiverUrl}"\nsample_ratio = 1.0\ncapture_content = true\nmetrics_enabled = true`
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

/** The fake upstream and the slow one (100 ms between chunks) on core 1, as a context; `stop` ends both. */
export const startUpstreams = async (dir: string, quick: boolean): Promise<{ readonly ctx: PerformanceContext; readonly stop: () => Promise<void> }> => {
  const upstream = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], "1", dir, "upstream")
  const slow = await startProcess(["test/fixtures/serve.ts", "--kind", "openai", "--chunk-delay-ms", "100"], "1", dir, "upstream-slow")
  const ctx: PerformanceContext = {
    dir,
    pools: new Pools(64),
    upstream: JSON.parse(upstream.line).url as string,
    slowUpstream: JSON.parse(slow.line).url as string,
    quick
  }
  const stop = async () => {
    await stopProcess(upstream.child)
    await stopProcess(slow.child)
  }
  return { ctx, stop }
}

const REQUESTS = (ctx: PerformanceContext) => (ctx.quick ? 3_000 : 15_000)
const PACED_SECONDS = (ctx: PerformanceContext) => (ctx.quick ? 2 : 6)
const ROUNDS = (ctx: PerformanceContext) => (ctx.quick ? 2 : 3)
const CONCURRENCY = 32
export const PACED_RPS = 500
const STREAMS = 1_000

/** What one round measures on one target, JSON and stream. */
export interface LoadPlan {
  /** Requests of each full-load run. */
  readonly requests: number
  /** Seconds of each run at `PACED_RPS`. */
  readonly pacedSeconds: number
  /** Full load: a closed loop at concurrency 32 (CPU per request, requests/s). */
  readonly full: boolean
  /** An open loop at `PACED_RPS` (p50, p99, CPU per request). */
  readonly paced: boolean
}

/**
 * One round of the load figures on one target, JSON then stream: for each,
 * the full-load run, then the run at `PACED_RPS`. `pid` is the process whose
 * CPU counts (none for the direct call: the upstream's CPU is not a proxy's).
 *
 * Figures (`kind` is `json` or `stream`): `cpu_us_full_<kind>`,
 * `rps_full_<kind>`, `cpu_us_500rps_<kind>`, `p50_us_500rps_<kind>`,
 * `p99_us_500rps_<kind>`.
 */
export const measureLoad = async (pool: Pool, url: string, pid: number | undefined, plan: LoadPlan): Promise<Record<string, number>> => {
  const figures: Record<string, number> = {}
  const cpu = async <A extends { readonly requests: number }>(run: () => Promise<A>) =>
    pid === undefined ? { result: await run(), cpuPerRequest: undefined } : withCpu(pid, run, served)
  for (const stream of [false, true]) {
    const scenario = chatScenario("bench", url, stream)
    const kind = stream ? "stream" : "json"
    if (plan.full) {
      const full = await cpu(() => closedLoop(pool, scenario, plan.requests, CONCURRENCY))
      if (full.cpuPerRequest !== undefined) figures[`cpu_us_full_${kind}`] = full.cpuPerRequest
      figures[`rps_full_${kind}`] = Math.round(full.result.rps)
    }
    if (plan.paced) {
      const paced = await cpu(() => pacedLoop(pool, scenario, PACED_RPS, plan.pacedSeconds))
      if (paced.cpuPerRequest !== undefined) figures[`cpu_us_${PACED_RPS}rps_${kind}`] = paced.cpuPerRequest
      figures[`p50_us_${PACED_RPS}rps_${kind}`] = Math.round(paced.result.p50 * 1000)
      figures[`p99_us_${PACED_RPS}rps_${kind}`] = Math.round(paced.result.p99 * 1000)
    }
  }
  return figures
}

/**
 * Requests of each kind that warm a gateway up until its JIT has settled. Counted with
 * `--trace-opt` (2026-11-28): after 3,000 JSON and 3,000 streams (the warm-up this replaces)
 * V8 still optimized 189 functions during the next 10,000 JSON requests and 51 during 10,000
 * streams, on background threads whose CPU the figures count, so a first round read up to
 * 40 % above the next; after 13,000 of each, 7 and 28. The hop's code settles far sooner: a
 * short warm-up charged the gateway with its compilation and not the hop.
 */
export const WARM_UP_REQUESTS = 10_000

/** Warms a target up (the JIT, the pools): `WARM_UP_REQUESTS` of JSON and of stream. */
export const warmUp = async (pool: Pool, url: string): Promise<void> => {
  await closedLoop(pool, chatScenario("warm-up", url, false), WARM_UP_REQUESTS, CONCURRENCY)
  await closedLoop(pool, chatScenario("warm-up", url, true), WARM_UP_REQUESTS, CONCURRENCY)
}

/**
 * A row of a side-by-side table: the two medians (keyed by their labels), their ratio a ÷ b,
 * a goal and whether the medians meet it, and every round's values of each.
 */
export interface SideBySideRow {
  readonly figure: string
  readonly rounds: Readonly<Record<string, ReadonlyArray<number>>>
  readonly [column: string]: string | number | Readonly<Record<string, ReadonlyArray<number>>>
}

const sideBySide = (
  figure: string,
  [aLabel, a]: readonly [string, ReadonlyArray<number>],
  [bLabel, b]: readonly [string, ReadonlyArray<number>],
  goal: string,
  met: ((a: number, b: number) => boolean) | undefined
): SideBySideRow => {
  const am = median(a)
  const bm = median(b)
  return {
    figure,
    [aLabel]: am,
    [bLabel]: bm,
    ratio: bm === 0 ? "–" : round(am / bm, 2),
    goal,
    met: met === undefined ? "" : met(am, bm) ? "yes" : "NO",
    rounds: { [aLabel]: a, [bLabel]: b }
  }
}

const values = (figures: RoundFigures, name: string): Array<number> => figures.get(name) ?? []

export interface HopTable {
  readonly rounds: number
  /** The direct call's p50 at 500 req/s, JSON and stream (median, µs): what added latency is measured from. */
  readonly direct: Record<string, number>
  readonly rows: ReadonlyArray<SideBySideRow>
}

/**
 * The gateway beside the bare Node hop (issue 29), on the same fake upstream,
 * in interleaved rounds (direct, hop, gateway, then gateway, hop, direct, …):
 * each round measures full load and 500 req/s, JSON and stream, on each
 * (500 req/s only on the direct call). Added p50 is a target's p50 less the
 * direct call's of the same round; every figure is the median over rounds.
 */
export const hopTable = async (
  ctx: PerformanceContext,
  hop: { readonly url: string; readonly pid: number },
  floor: { readonly url: string; readonly pid: number },
  gateway: { readonly url: string; readonly pid: number }
): Promise<HopTable> => {
  const plan = { requests: REQUESTS(ctx), pacedSeconds: PACED_SECONDS(ctx), full: true, paced: true }
  const targets = [
    { label: "direct", url: ctx.upstream, pid: undefined, plan: { ...plan, full: false } },
    { label: "hop", url: hop.url, pid: hop.pid, plan },
    { label: "floor", url: floor.url, pid: floor.pid, plan },
    { label: "gateway", url: gateway.url, pid: gateway.pid, plan }
  ]
  for (const target of targets) await warmUp(ctx.pools.for(target.url), target.url)
  const [direct, hopFigures, floorFigures, gatewayFigures] = await interleavedRounds(targets, ROUNDS(ctx), (target) => measureLoad(ctx.pools.for(target.url), target.url, target.pid, target.plan))
  for (const figures of [hopFigures, floorFigures, gatewayFigures]) {
    for (const kind of ["json", "stream"]) {
      for (const p of ["p50", "p99"]) {
        const name = `${p}_us_${PACED_RPS}rps_${kind}`
        figures.set(`added_${name}`, values(figures, name).map((value, r) => value - values(direct, name)[r]))
      }
    }
  }
  // The floor (the hop plus what the specification asks of any gateway, bench/node-hop.ts `--floor`) beside
  // them: how much of the ratio no gateway could save.
  const row = (figure: string, name: string, goal: string, met?: (gateway: number, hop: number) => boolean): SideBySideRow => {
    const { rounds, ...side } = sideBySide(figure, ["gateway", values(gatewayFigures, name)], ["hop", values(hopFigures, name)], goal, met)
    const floorRounds = values(floorFigures, name)
    const hopMedian = median(values(hopFigures, name))
    const floorMedian = median(floorRounds)
    return { ...side, floor: floorMedian, "floor ÷ hop": hopMedian === 0 ? "–" : round(floorMedian / hopMedian, 2), rounds: { ...rounds, floor: floorRounds } }
  }
  const cpuGoal = (gateway: number, hop: number) => gateway <= 1.3 * hop
  const rows: Array<SideBySideRow> = []
  for (const kind of ["json", "stream"]) rows.push(row(`CPU µs/request, full load, ${kind}`, `cpu_us_full_${kind}`, "≤ 1.3× hop", cpuGoal))
  for (const kind of ["json", "stream"]) rows.push(row(`CPU µs/request at ${PACED_RPS} req/s, ${kind}`, `cpu_us_${PACED_RPS}rps_${kind}`, "≤ 1.3× hop", cpuGoal))
  for (const kind of ["json", "stream"]) {
    rows.push(row(`added p50 µs at ${PACED_RPS} req/s, ${kind}`, `added_p50_us_${PACED_RPS}rps_${kind}`, "≤ hop + 50 µs", (gateway, hop) => gateway <= hop + 50))
  }
  for (const kind of ["json", "stream"]) rows.push(row(`added p99 µs at ${PACED_RPS} req/s, ${kind}`, `added_p99_us_${PACED_RPS}rps_${kind}`, "–"))
  for (const kind of ["json", "stream"]) rows.push(row(`max req/s, full load, ${kind}`, `rps_full_${kind}`, "≥ 0.75× hop", (gateway, hop) => gateway >= 0.75 * hop))
  return {
    rounds: ROUNDS(ctx),
    direct: {
      [`p50_us_${PACED_RPS}rps_json`]: median(values(direct, `p50_us_${PACED_RPS}rps_json`)),
      [`p50_us_${PACED_RPS}rps_stream`]: median(values(direct, `p50_us_${PACED_RPS}rps_stream`))
    },
    rows
  }
}

/**
 * Resident memory of a fresh gateway (MiB): idle (a second after it
 * started), after full load (JSON), with `streams` streams open at once
 * through the slow upstream (each lasts ~2 s), and its peak (VmHWM) after all
 * that. The streams open in two halves, 0.7 s apart, so that all are open
 * while the second half is sampled. Two figures per open stream:
 * - KiB per open stream: the most RSS with all open, over the RSS after full
 *   load, divided by all the streams. It also counts what the load left
 *   behind: a build that leaves less garbage after the load (room the streams
 *   would have reused) reads higher here for the same streams.
 * - KiB per added stream: the second half's growth over the most RSS with
 *   the first half open, divided by the second half: what one more stream
 *   costs once the room left by the load is used.
 */
export const freshGatewayMemory = async (ctx: PerformanceContext, name: string, options: GatewayOptions, streams: number): Promise<Record<string, number>> => {
  const gateway = await startGateway(ctx.dir, name, ctx.slowUpstream, options)
  const many = new Pool(gateway.url, { connections: streams })
  try {
    const pid = gateway.child.pid!
    await sleep(1000)
    const idle = memoryMiB(pid).rss
    await closedLoop(ctx.pools.for(gateway.url), chatScenario("gateway", gateway.url, false), REQUESTS(ctx), CONCURRENCY)
    await sleep(1000)
    // KiB as the kernel counts them: rounded to MiB first, 300 streams read in steps of 3.4 KiB.
    const afterLoad = memoryKiB(pid).rss
    const scenario = chatScenario("gateway", gateway.url, true)
    const half = Math.floor(streams / 2)
    /** The most RSS over `samples` × 100 ms. */
    const most = async (samples: number, from: number): Promise<number> => {
      let seen = from
      for (let i = 0; i < samples; i++) {
        await sleep(100)
        seen = Math.max(seen, memoryKiB(pid).rss)
      }
      return seen
    }
    const first = Array.from({ length: half }, () => oneRequest(many, scenario))
    const withHalf = await most(7, afterLoad)
    const second = Array.from({ length: streams - half }, () => oneRequest(many, scenario))
    const withStreams = await most(8, withHalf)
    await Promise.all([...first, ...second])
    return {
      rss_idle_mib: idle,
      rss_after_full_load_mib: Math.round(afterLoad / 1024),
      rss_with_open_streams_mib: Math.round(withStreams / 1024),
      kib_per_open_stream: round((withStreams - afterLoad) / streams, 1),
      kib_per_added_stream: round((withStreams - withHalf) / (streams - half), 1),
      rss_peak_mib: memoryMiB(pid).peak
    }
  } finally {
    await many.destroy()
    await ctx.pools.forget(gateway.url)
    await stopProcess(gateway.child)
  }
}

export interface FlagsTable {
  readonly rounds: number
  readonly flags: string
  readonly rows: ReadonlyArray<SideBySideRow>
}

/**
 * The memory flags' trade: the same bundle with `npm start`'s flags and
 * environment (`START_NODE_FLAGS`, `START_ENV`) and with Node's defaults, in
 * interleaved rounds. Each round measures, on each, the CPU per request at
 * full load (JSON and stream, a gateway kept running and warmed up) and the
 * memory of a fresh gateway (`freshGatewayMemory`, 1,000 open streams).
 * Ratio: `npm start` ÷ Node's defaults.
 */
export const flagsTable = async (ctx: PerformanceContext): Promise<FlagsTable> => {
  const variants = [
    { label: "npm start flags", options: {} },
    { label: "Node defaults", options: { nodeDefaults: true } }
  ]
  const plan = { requests: REQUESTS(ctx), pacedSeconds: 0, full: true, paced: false }
  const running: Array<Gateway> = []
  try {
    for (const [index, variant] of variants.entries()) running.push(await startGateway(ctx.dir, `gateway-flags-${index}`, ctx.upstream, variant.options))
    for (const gateway of running) await warmUp(ctx.pools.for(gateway.url), gateway.url)
    const [start, defaults] = await interleavedRounds(variants, ROUNDS(ctx), async (variant, index) => ({
      ...(await measureLoad(ctx.pools.for(running[index].url), running[index].url, running[index].child.pid!, plan)),
      ...(await freshGatewayMemory(ctx, `gateway-memory-${index}`, variant.options, STREAMS))
    }))
    const row = (figure: string, name: string, goal = "", met?: (start: number) => boolean) =>
      sideBySide(figure, ["npm start flags", values(start, name)], ["Node defaults", values(defaults, name)], goal, met === undefined ? undefined : (a) => met(a))
    return {
      rounds: ROUNDS(ctx),
      flags: `${Object.entries(START_ENV).map(([name, value]) => `${name}=${value}`).join(" ")} ${START_NODE_FLAGS.join(" ")}`,
      rows: [
        row("CPU µs/request, full load, json", "cpu_us_full_json"),
        row("CPU µs/request, full load, stream", "cpu_us_full_stream"),
        row("RSS idle, MiB", "rss_idle_mib", "≤ 80 (npm start)", (a) => a <= 80),
        row("RSS after full load, MiB", "rss_after_full_load_mib"),
        row(`RSS with ${STREAMS} open streams, MiB`, "rss_with_open_streams_mib"),
        row("KiB per open stream", "kib_per_open_stream"),
        row("KiB per added stream", "kib_per_added_stream"),
        row(`peak RSS (with ${STREAMS} open streams), MiB`, "rss_peak_mib", "≤ 150 (npm start)", (a) => a <= 150)
      ]
    }
  } finally {
    for (const gateway of running) {
      await ctx.pools.forget(gateway.url)
      await stopProcess(gateway.child)
    }
  }
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

/** Context switches of a process's main thread so far, voluntary (it waited) and not (it was preempted). */
export const contextSwitches = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0) + Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0)
}

/** The pid of each worker of a cluster gateway (worker number → pid), from the primary's "worker started" lines. */
export const workerPids = (log: string): Map<number, number> => {
  const pids = new Map<number, number>()
  for (const line of readFileSync(log, "utf8").split("\n")) {
    if (!line.includes("\"msg\":\"worker started\"")) continue
    const { worker, pid } = JSON.parse(line) as { readonly worker: number; readonly pid: number }
    pids.set(worker, pid)
  }
  return pids
}

/** The request lines of each worker in `log` from byte `from` on (worker 0: a single process). */
export const requestsByWorker = (log: string, from: number): Map<number, number> => {
  const fd = openSync(log, "r")
  try {
    const buffer = Buffer.alloc(Math.max(0, fstatSync(fd).size - from))
    readSync(fd, buffer, 0, buffer.length, from)
    const counts = new Map<number, number>()
    for (const match of buffer.toString("utf8").matchAll(/^\{[^\n]*?"level":"info"(?:,"worker":(\d+))?,"msg":"request"/gm)) {
      const worker = match[1] === undefined ? 0 : Number(match[1])
      counts.set(worker, (counts.get(worker) ?? 0) + 1)
    }
    return counts
  } finally {
    closeSync(fd)
  }
}

/**
 * Workers. A two-core machine cannot show 2× requests/s outright: the load
 * generator and the upstream need the same cores. So each configuration runs
 * at full load (concurrency 64) and reports requests/s, the CPU per request
 * summed over every gateway process (the primary included), the cores the
 * gateway used (its share of the machine), and each worker's own CPU per
 * request (its CPU time over the requests its log lines count) against a
 * single process's with the same requests in flight, 32 (issue 29: within
 * 1.05×, what scaling needs), and the context switches of the gateway's
 * main threads per request (each one a wake-up or a preemption):
 *
 * - 1 worker on core 0 (a single process: no primary), 64 in flight, and 32;
 * - 2 workers both on core 0: the same core's requests/s with a second
 *   process (what the cluster itself costs);
 * - 2 workers on cores 0 and 1, sharing them with the load generator;
 * - the control: two single-process gateways on core 0 loaded at once (32 in
 *   flight each), the core shared as two workers share it but no cluster:
 *   `worker_vs_control` is what the cluster adds to that.
 *
 * The three gateways run side by side and the four loads are measured in
 * interleaved rounds (medians).
 * projected scaling = 2 × (requests/s per core, 2 workers) / (requests/s per core, 1 worker).
 */
/**
 * Requests of warm-up for each gateway process before the workers table counts anything. A gateway's
 * CPU per request falls as its JIT settles: one fresh gateway, blocks of 1,000 JSON requests at 32 in
 * flight, read 840 µs (the first), 290 (the third), 230 (the fifth to seventh), 200 (the ninth), and
 * 150–190 from the thirteenth on. With a warm-up of a third of a run for every gateway (1,000 in a quick
 * run), each of two workers had 500 and was counted over its requests 500–2,000 while the single
 * process, loaded twice a round, was long warm: the 1.72× a quick run read was mostly that.
 */
const WARMUP_PER_PROCESS = 15_000
/** The workers table's control (two single gateways sharing core 0), in place of a configuration's index. */
const PAIR = -1

export const workersScaling = async (ctx: PerformanceContext) => {
  const configurations = [
    { workers: 1, cpu: "0" },
    { workers: 2, cpu: "0" },
    { workers: 2, cpu: "0,1" }
  ] as const
  // What is loaded: a configuration's gateway with so many requests in flight.
  const runs = [
    { label: "1 worker, core 0", gateway: 0, inFlight: 64 },
    { label: "1 worker, core 0, 32 in flight (each worker's share)", gateway: 0, inFlight: 32 },
    { label: "2 workers, core 0", gateway: 1, inFlight: 64 },
    { label: "2 workers, cores 0-1", gateway: 2, inFlight: 64 },
    { label: "control: 2 single gateways, core 0, 32 in flight each", gateway: PAIR, inFlight: 32 }
  ] as const
  const gateways: Array<Gateway> = []
  // The control: two single-process gateways on core 0, loaded at once (the core shared as two workers share it, no cluster).
  const pair: Array<Gateway> = []
  try {
    for (const { workers, cpu } of configurations) {
      gateways.push(await startGateway(ctx.dir, `gateway-workers-${workers}-${cpu}`, ctx.upstream, { server: `workers = ${workers}`, cpu }))
    }
    for (const n of [1, 2]) pair.push(await startGateway(ctx.dir, `gateway-pair-${n}`, ctx.upstream, { server: "workers = 1", cpu: "0" }))
    // The same warm-up for every process: a cluster's gateway gets WARMUP_PER_PROCESS for each worker.
    for (const [index, gateway] of gateways.entries()) {
      await closedLoop(ctx.pools.for(gateway.url), chatScenario("warm-up", gateway.url, false), WARMUP_PER_PROCESS * configurations[index].workers, 64)
    }
    for (const gateway of pair) await closedLoop(ctx.pools.for(gateway.url), chatScenario("warm-up", gateway.url, false), WARMUP_PER_PROCESS, 32)
    const figures = await interleavedRounds(runs, ROUNDS(ctx), async (run) => {
      if (run.gateway === PAIR) return pairRun(ctx, pair, run.inFlight)
      const gateway = gateways[run.gateway]
      const primary = gateway.child.pid!
      // A single process counts as worker 0; a cluster's workers by the number the primary gave them.
      const pids = configurations[run.gateway].workers === 1 ? new Map([[0, primary]]) : workerPids(gateway.log)
      await sleep(200) // the log flushes once the event loop is idle
      const from = statSync(gateway.log).size
      const before = new Map([...pids].map(([worker, pid]) => [worker, cpuMicros(pid)]))
      const switchesBefore = [...pids.values()].reduce((sum, pid) => sum + contextSwitches(pid), 0)
      const scenario = chatScenario("gateway", gateway.url, false)
      const { result, cpuPerRequest } = await withCpu(primary, () => closedLoop(ctx.pools.for(gateway.url), scenario, REQUESTS(ctx), run.inFlight), served, true)
      const after = new Map([...pids].map(([worker, pid]) => [worker, cpuMicros(pid)]))
      const switches = [...pids.values()].reduce((sum, pid) => sum + contextSwitches(pid), 0) - switchesBefore
      await sleep(200)
      const requests = requestsByWorker(gateway.log, from)
      const out: Record<string, number> = { rps: result.rps, cpu_us_per_request: cpuPerRequest, switches_per_request: switches / result.requests }
      for (const [worker, cpu] of after) out[`cpu_us_per_request_worker_${worker}`] = Math.round((cpu - before.get(worker)!) / (requests.get(worker) ?? Number.NaN))
      return out
    })
    const singleAt = (index: number) => median(values(figures[index], "cpu_us_per_request_worker_0"))
    // Each of 2 workers has half the 64 requests in flight: the single process with 32 is the like-for-like reference.
    const single = singleAt(1)
    const rows: Array<Record<string, unknown>> = []
    const perCore: Array<number> = []
    // The control's worse process: what two processes sharing core 0 cost each, without a cluster.
    const control = Math.max(...[1, 2].map((n) => median(values(figures[runs.length - 1], `cpu_us_per_request_worker_${n}`))))
    for (const [index, { label, gateway }] of runs.entries()) {
      const workers = gateway === PAIR ? 2 : configurations[gateway].workers
      const goal = workers === 2 && gateway !== PAIR
      const rps = median(values(figures[index], "rps"))
      const cpuPerRequest = median(values(figures[index], "cpu_us_per_request"))
      // CPU seconds per second: requests/s × CPU per request.
      const cores = (rps * cpuPerRequest) / 1e6
      perCore.push(rps / cores)
      const eachWorker = workers === 1 ? [] : Array.from({ length: workers }, (_, i) => median(values(figures[index], `cpu_us_per_request_worker_${i + 1}`)))
      const worst = Math.max(...eachWorker)
      rows.push({
        gateway: label,
        rps: Math.round(rps),
        cpu_us_per_request: cpuPerRequest,
        gateway_cores_used: round(cores, 2),
        rps_per_gateway_core: Math.round(rps / cores),
        switches_per_request: round(median(values(figures[index], "switches_per_request")), 2),
        cpu_us_per_request_each_worker: workers === 1 ? [singleAt(index)] : eachWorker,
        worker_vs_single: workers === 1 ? "" : round(worst / single, 2),
        worker_vs_single_64_in_flight: workers === 1 ? "" : round(worst / singleAt(0), 2),
        // Two workers on core 0 against two single gateways on core 0: what the cluster adds to the core's sharing.
        worker_vs_control: gateway === 1 ? round(worst / control, 2) : "",
        goal: goal ? "≤ 1.05× single (32 in flight)" : "",
        met: goal ? (worst <= 1.05 * single ? "yes" : "NO") : "",
        rounds_cpu_us_per_request: values(figures[index], "cpu_us_per_request")
      })
    }
    rows.push({
      gateway: "projected scaling, 2 workers vs 1",
      rps: round((2 * perCore[3]) / perCore[0], 2),
      rps_per_gateway_core: round(perCore[2] / perCore[0], 2)
    })
    return { rounds: ROUNDS(ctx), rows }
  } finally {
    for (const gateway of [...gateways, ...pair]) {
      await ctx.pools.forget(gateway.url)
      await stopProcess(gateway.child)
    }
  }
}

/** The control's run: both single gateways of `pair` loaded at once, half the requests each; each counts as a worker (1, 2). */
const pairRun = async (ctx: PerformanceContext, pair: ReadonlyArray<Gateway>, inFlight: number): Promise<Record<string, number>> => {
  const pids = pair.map((gateway) => gateway.child.pid!)
  const before = pids.map(cpuMicros)
  const switchesBefore = pids.reduce((sum, pid) => sum + contextSwitches(pid), 0)
  const started = performance.now()
  const results = await Promise.all(pair.map((gateway) => closedLoop(ctx.pools.for(gateway.url), chatScenario("gateway", gateway.url, false), REQUESTS(ctx) / 2, inFlight)))
  const seconds = (performance.now() - started) / 1000
  const after = pids.map(cpuMicros)
  const switches = pids.reduce((sum, pid) => sum + contextSwitches(pid), 0) - switchesBefore
  const requests = results.reduce((sum, result) => sum + result.requests, 0)
  const cpu = after.reduce((sum, value, i) => sum + value - before[i], 0)
  const out: Record<string, number> = { rps: requests / seconds, cpu_us_per_request: Math.round(cpu / requests), switches_per_request: switches / requests }
  for (const [i, result] of results.entries()) out[`cpu_us_per_request_worker_${i + 1}`] = Math.round((after[i] - before[i]) / result.requests)
  return out
}

export interface PerformanceResult {
  readonly hop?: HopTable | undefined
  readonly memory?: FlagsTable | undefined
  readonly burst?: ReadonlyArray<Record<string, unknown>> | undefined
  readonly workers?: { readonly rounds: number; readonly rows: ReadonlyArray<Record<string, unknown>> } | undefined
}

export const SECTIONS = ["hop", "memory", "burst", "workers"] as const

/** Every figure of issues 14 and 29 in one run. `only` picks sections (`SECTIONS`). */
export const runPerformanceBench = async (options: { readonly quick: boolean; readonly only?: ReadonlySet<string> | undefined }): Promise<PerformanceResult> => {
  for (const name of options.only ?? []) if (!(SECTIONS as ReadonlyArray<string>).includes(name)) throw new Error(`no section ${name} (${SECTIONS.join(", ")})`)
  const wanted = (name: (typeof SECTIONS)[number]) => options.only === undefined || options.only.has(name)
  const dir = mkdtempSync(join(tmpdir(), "gateway-perf-"))
  const { ctx, stop } = await startUpstreams(dir, options.quick)
  const result: { -readonly [K in keyof PerformanceResult]: PerformanceResult[K] } = {}
  try {
    if (wanted("hop") || wanted("burst")) {
      const hop = await startProcess(["bench/node-hop.ts", ctx.upstream], "0", dir, "node-hop")
      const floor = await startProcess(["bench/node-hop.ts", ctx.upstream, "--floor"], "0", dir, "node-hop-floor")
      const gateway = await startGateway(dir, "gateway-performance", ctx.upstream)
      const target = (started: { readonly line: string; readonly child: { readonly pid?: number | undefined } }) => ({ url: `http://127.0.0.1:${JSON.parse(started.line).port as number}`, pid: started.child.pid! })
      try {
        if (wanted("hop")) result.hop = await hopTable(ctx, target(hop), target(floor), { url: gateway.url, pid: gateway.child.pid! })
        if (wanted("burst")) result.burst = await burstThenLowRate(ctx, gateway)
      } finally {
        await stopProcess(hop.child)
        await stopProcess(floor.child)
        await ctx.pools.forget(gateway.url)
        await stopProcess(gateway.child)
      }
    }
    if (wanted("memory")) result.memory = await flagsTable(ctx)
    if (wanted("workers")) result.workers = await workersScaling(ctx)
  } finally {
    await ctx.pools.close()
    await stop()
  }
  return result
}

/** Rows as console.table shows them: a list of numbers as one string (`a a`), the lists of two sides as `a a | b b`. */
const printable = (rows: ReadonlyArray<Record<string, unknown>>) =>
  rows.map((row) =>
    Object.fromEntries(Object.entries(row).map(([key, value]) => {
      if (Array.isArray(value)) return [key, value.join(" ")]
      if (typeof value === "object" && value !== null) return [key, Object.values(value).map((list: ReadonlyArray<number>) => list.join(" ")).join(" | ")]
      return [key, value]
    }))
  )

export const printPerformance = (result: PerformanceResult): void => {
  if (result.hop !== undefined) {
    const direct = Object.values(result.hop.direct).join(" / ")
    console.log(`gateway (npm start) beside the bare Node hop, median of ${result.hop.rounds} interleaved rounds (direct call's p50 at ${PACED_RPS} req/s, JSON / stream: ${direct} µs)`)
    console.table(printable(result.hop.rows))
  }
  if (result.memory !== undefined) {
    console.log(`the memory flags' trade: npm start (${result.memory.flags}) beside Node's defaults, same bundle, median of ${result.memory.rounds} interleaved rounds`)
    console.table(printable(result.memory.rows))
  }
  if (result.burst !== undefined) console.table(result.burst)
  if (result.workers !== undefined) {
    console.log(`workers, full load, median of ${result.workers.rounds} interleaved rounds`)
    console.table(printable(result.workers.rows))
  }
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
