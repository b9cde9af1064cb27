/**
 * `node bench/instructions.ts REF… [--warmup N] [--count N]`: instructions per
 * request of each build under callgrind, JSON and stream. A ref is a git ref
 * or `.` for the working tree. Instruction counts stay steady on a busy
 * machine where CPU time moves by ±25 % (README.md, "Telemetry"), so this is
 * the way to choose between two designs of the request path.
 *
 * Each build is built as `npm start` builds it (its own `scripts/build.ts`),
 * run with `npm start`'s Node flags under
 * `valgrind --tool=callgrind --instr-atstart=no` on core 0, warmed up with
 * `--warmup` requests of each kind (the JIT settles), and then counted over
 * `--count` requests of each kind: `callgrind_control --instr=on`, the
 * requests, `--instr=off`, `--dump`, and the dump's total divided by the
 * requests.
 *
 * The ref `hop` is the bare Node hop (bench/node-hop.ts, Node's default flags): the
 * floor issue 29's goals are ratios to, counted the same way.
 *
 * A ref ending in `+keys` runs with a gateway key (`[keys]`) sent with every
 * request; `+limits` gives that key rate limits counted in the Redis of
 * `--limits REDIS_URL` (far above the load, so every request is admitted and
 * settled). `node bench/instructions.ts . .+keys .+limits --limits URL`: the
 * differences are the cost of the key check, and of the key check and limits.
 *
 * The stages of issue 29's table ("What each stage costs" in README.md), each the least
 * configuration that turns it on for the chat request: `+guardrails` (`[security]` with output
 * guardrails and a three-term blocklist the prompt does not hit), `+cache-hit` (`[cache]` in
 * database 9 of the Redis of `--limits`, or 127.0.0.1:6379, `default_mode = "always"`: every
 * request the same, all hits after the first), `+cache-miss` (the same, a distinct prompt per
 * request), `+metrics-off` (`[metrics] enabled = false`: the metrics are on by default, so the
 * base row pays them), `+route` (a fallback route for `gpt-4o` over two targets on the one
 * upstream), `+continuation` and `+hedging` (that route with `on_stream_break = "continue"`, or
 * `hedge_after_ms` that never fires: both armed, never used; read them over `+route`),
 * `+responses-unstored` (the prompt on `/v1/responses` with `store: false`, no `[responses]`:
 * the provider is named `openai`, so it serves the Responses API itself and the request takes the
 * fast path to the upstream's `/responses`), `+responses-translated` (the same with the provider's
 * `responses_api = false`: translated to Chat Completions and the answer back to Responses events)
 * and `+responses` (`[responses]` on in database 9, `store: true`: every answer kept).
 *
 * A ref ending in `+telemetry` runs with the specification's telemetry
 * defaults (application traces on at `sample_ratio = 0.1`, GenAI off), and
 * `+telemetry-all` with everything at 1.0 (application traces and GenAI spans
 * with content capture and metrics), both exporting to an OTLP receiver (a real
 * gRPC server that accepts and forgets) in its own process on core 1; a bare
 * ref has both sections off; `+telemetry-none` has application traces on at
 * `sample_ratio = 0.0` (what an unsampled request pays), `+telemetry-trace` at 1.0
 * without GenAI (what a sampled request pays); `-batched` after any (`+telemetry-all-batched`) sets
 * `export_delay_ms` so that exports leave as full batches, as at full load (see `BATCHED_DELAY_MS`).
 * `node bench/instructions.ts . .+telemetry .+telemetry-all`:
 * the two figures of the telemetry goal (issue 29). The export's encoding and
 * gRPC calls run on the main thread, so they are in both columns.
 *
 * A ref ending in `+workers` runs `[server] workers = 2` (valgrind follows the
 * primary's forks, `--trace-children=yes`) and counts each worker's
 * instructions over the requests its log lines count (`json_worker_1`, …;
 * `json` is the workers' sum over all requests, the primary left out: it
 * only hands out connections, and the load keeps its connections open).
 * `node bench/instructions.ts . .+workers --concurrency 32`: whether a worker
 * runs more code per request than a single process (issue 29's workers goal);
 * each worker has about half the requests in flight, so run the single
 * process at half the concurrency too (`--concurrency 16 .`) for the like.
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildTree, checkoutRef } from "./compare.ts"
import { closedLoop, Pools, root, sleep, startProcess, stopProcess } from "./lib.ts"
import type { Scenario } from "./lib.ts"
import { chatScenario, requestsByWorker, startGateway, telemetrySections, twentyWords, workerPids } from "./performance.ts"

const CONCURRENCY = 32
/** Under valgrind a request takes far longer than the load generator's usual deadline: loop in slices. */
const SLICE_SECONDS = 100

const option = (argv: ReadonlyArray<string>, name: string, fallback: number): number => {
  const at = argv.indexOf(name)
  return at === -1 ? fallback : Number(argv[at + 1])
}

const callgrind = (pid: number, flag: string): void => {
  execFileSync("callgrind_control", [flag, String(pid)], { stdio: "ignore" })
}

/**
 * The instructions of dump number `dump` of `pid` in `dir`: all threads, and the main
 * thread alone (V8's compiler and GC helper threads run when the machine lets them, so
 * their share moves with other work on the machine more than the main thread's).
 */
const dumpTotals = (dir: string, pid: number, dump: number): { readonly all: number; readonly main: number } => {
  let all = 0
  let main = 0
  for (const name of readdirSync(dir).filter((file) => file.startsWith(`cg.${pid}.${dump}-`))) {
    const line = /^totals: (\d+)/m.exec(readFileSync(join(dir, name), "utf8"))
    if (line === null) throw new Error(`no total in ${name}`)
    all += Number(line[1])
    if (name.endsWith("-01")) main = Number(line[1])
  }
  return { all, main }
}

/** Waits (bounded) until `count` workers logged that they listen. */
const waitForWorkers = async (log: string, count: number): Promise<void> => {
  const deadline = Date.now() + 180_000
  while (Date.now() < deadline) {
    const listening = readFileSync(log, "utf8").split("\n").filter((line) => /"worker":\d+,"msg":"listening"/.test(line)).length
    if (listening >= count) return
    await sleep(500)
  }
  throw new Error(`${count} workers did not start`)
}

const BENCH_KEY = "bench-gateway-key-0123456789abcdef"
/** The Redis of the cache and Responses stages when `--limits` names none. */
const DEFAULT_REDIS = "redis://127.0.0.1:6379"

/**
 * `-batched`: spans wait for a full batch (512) instead of 1 s. Under callgrind the gateway serves
 * about 30 requests a second, so the 1 s timer would charge each export call (about 1.4 M
 * instructions with grpc-js) to some 30 requests; at full load a batch fills in 170 requests
 * (application trace) or 512 (GenAI) and the timer never fires. The batched rows count what a
 * request costs at full load; the plain rows what it costs at about 30 requests a second.
 */
const BATCHED_DELAY_MS = 3_600_000

/** A ref and the configuration, environment, headers and request of its suffix (nothing without). */
interface RefOptions {
  readonly ref: string
  readonly extra: string | undefined
  /** Keys added to the provider's table. */
  readonly provider?: string | undefined
  readonly telemetry?: string | undefined
  readonly env: Readonly<Record<string, string>> | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly workers?: number
  /** The request of each kind (`chatScenario` when not given). */
  readonly scenario?: (url: string, stream: boolean, headers: Readonly<Record<string, string>>) => Scenario
}

/** The chat request with a distinct prompt per request (a cache miss every time). */
const distinctChat = (url: string, stream: boolean, headers: Readonly<Record<string, string>>): Scenario => {
  const run = `${process.pid}-${Date.now()}`
  const base = chatScenario("gateway", url, stream, headers)
  return { ...base, bodyFor: (n) => JSON.stringify({ model: "gpt-4o", stream, messages: [{ role: "user", content: `${stream ? twentyWords : "hello"} ${run} ${n}` }] }) }
}

/** The chat request's prompt on `/v1/responses`, stored or not. */
const responsesRequest = (store: boolean) => (url: string, stream: boolean, headers: Readonly<Record<string, string>>): Scenario => ({
  ...chatScenario("gateway", url, stream, headers),
  path: "/v1/responses",
  body: JSON.stringify({ model: "gpt-4o", stream, store, input: stream ? twentyWords : "hello" })
})

/** A fallback route for the chat request's model over two targets on the one upstream; `armed` adds to the route. */
const twoTargets = (armed: string): string =>
  `[targets.first]\nmodel = "gpt-4o"\n\n[targets.second]\nmodel = "gpt-4o"\n\n[routes.bench]\nendpoint = "chat"\nmodels = ["gpt-4o"]\nstrategy = "fallback"\ntargets = ["first", "second"]\n${armed}`

/**
 * The stages of issue 29's table: each the least configuration that turns the stage on for the
 * chat request (`redis` for the cache and the Responses store, its database 9).
 */
const stageOptions = (suffix: string, redis: string): Omit<RefOptions, "ref"> | undefined => {
  const plain = { env: undefined, headers: {} }
  const cache = `[cache]\nenabled = true\nurl = "${redis}/9"\ndefault_mode = "always"\nencrypt_salt = "bench"\nttl_seconds = 120\n`
  switch (suffix) {
    case "guardrails":
      return { ...plain, extra: `[security]\nenabled = true\noutput_guardrails = true\nblocklist = ["forbidden-one", "forbidden-two", "forbidden-three"]\n` }
    case "cache-miss":
      return { ...plain, extra: cache, scenario: distinctChat }
    case "cache-hit":
      return { ...plain, extra: cache }
    case "metrics-off":
      return { ...plain, extra: `[metrics]\nenabled = false\n` }
    case "route":
      return { ...plain, extra: twoTargets("") }
    case "continuation":
      return { ...plain, extra: twoTargets(`on_stream_break = "continue"\n`) }
    case "hedging":
      return { ...plain, extra: twoTargets(`hedge_after_ms = 600000\n`) }
    case "responses-unstored":
      return { ...plain, extra: undefined, scenario: responsesRequest(false) }
    case "responses-translated":
      return { ...plain, extra: undefined, provider: "responses_api = false\n", scenario: responsesRequest(false) }
    case "responses":
      return { ...plain, extra: `[responses]\nenabled = true\nurl = "${redis}/9"\nencrypt_salt = "bench"\nstore_ttl_seconds = 120\n`, scenario: responsesRequest(true) }
    default:
      return undefined
  }
}

const keyOptions = (spec: string, limitsUrl: string | undefined, receiverUrl: () => string): RefOptions => {
  const [ref, suffix] = spec.split("+")
  if (suffix === undefined) return { ref, extra: undefined, env: undefined, headers: {} }
  if (suffix === "workers") return { ref, extra: undefined, env: undefined, headers: {}, workers: 2 }
  const telemetry = /^telemetry(?:-(all|none|trace))?(-batched)?$/.exec(suffix)
  if (telemetry !== null) {
    const which = (telemetry[1] ?? "defaults") as "defaults" | "all" | "none" | "trace"
    const sections = telemetrySections(which, receiverUrl(), telemetry[2] === undefined ? undefined : BATCHED_DELAY_MS)
    return { ref, extra: undefined, telemetry: sections, env: undefined, headers: {} }
  }
  const stage = stageOptions(suffix, limitsUrl ?? DEFAULT_REDIS)
  if (stage !== undefined) return { ref, ...stage }
  if (suffix !== "keys" && suffix !== "limits") throw new Error(`unknown suffix +${suffix}`)
  if (suffix === "limits" && limitsUrl === undefined) throw new Error("+limits needs --limits REDIS_URL")
  const limited = suffix !== "limits"
    ? ""
    : `requests_per_minute = 1000000000\ntokens_per_minute = 1000000000000\nconcurrent_requests = 100000\n\n[limits]\nurl = "${limitsUrl}"\n`
  return {
    ref,
    extra: `[keys.bench]\nkey = "env::BENCH_GATEWAY_KEY"\n${limited}`,
    env: { BENCH_GATEWAY_KEY: BENCH_KEY },
    headers: { "x-gw-authorization": `Bearer ${BENCH_KEY}` }
  }
}

/** The bare hop under `wrap`, as `startGateway` gives a gateway (its url, child and log). */
const startHop = async (dir: string, index: number, upstream: string, cpu: string | undefined, wrap: ReadonlyArray<string>) => {
  const hop = await startProcess(["bench/node-hop.ts", upstream], cpu ?? "0", dir, `hop-${index}`, { wrap })
  return { url: `http://127.0.0.1:${JSON.parse(hop.line).port as number}`, child: hop.child, log: hop.log }
}

const requests = async (url: string, pools: Pools, stream: boolean, count: number, keys: RefOptions, concurrency: number): Promise<number> => {
  const scenario = keys.scenario?.(url, stream, keys.headers) ?? chatScenario("gateway", url, stream, keys.headers)
  let done = 0
  for (let slice = 0; slice < 20 && done < count; slice++) {
    done += (await closedLoop(pools.for(url), scenario, count - done, concurrency, SLICE_SECONDS)).requests
  }
  return done
}

const main = async (argv: ReadonlyArray<string>) => {
  const refs = argv.filter((arg, i) => !arg.startsWith("--") && !["--warmup", "--count", "--limits", "--concurrency", "--kinds", "--cpu"].includes(argv[i - 1] ?? ""))
  const limitsAt = argv.indexOf("--limits")
  const limitsUrl = limitsAt === -1 ? undefined : argv[limitsAt + 1]
  const warmup = option(argv, "--warmup", 12_000)
  const count = option(argv, "--count", 4_000)
  const concurrency = option(argv, "--concurrency", CONCURRENCY)
  // `--kinds json` (or `stream`): that kind alone, warm-up included.
  const kindsAt = argv.indexOf("--kinds")
  const kinds = kindsAt === -1 ? ["json", "stream"] : argv[kindsAt + 1].split(",")
  // `--cpu 1`: the gateway on another core than 0 (a busy core 0 slows the run, not its counts).
  const cpuAt = argv.indexOf("--cpu")
  const cpu = cpuAt === -1 ? undefined : argv[cpuAt + 1]
  const dir = mkdtempSync(join(tmpdir(), "gateway-instructions-"))
  const upstreamProcess = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], "1", dir, "upstream")
  const upstream = JSON.parse(upstreamProcess.line).url as string
  const pools = new Pools(64)
  const rows: Array<Record<string, unknown>> = []
  // The OTLP receiver of the `+telemetry` suffixes, on core 1 beside the upstream; started only for them.
  const receiver = refs.some((spec) => spec.includes("+telemetry"))
    ? await startProcess(["bench/telemetry.ts", "--receiver"], "1", dir, "otlp-receiver")
    : undefined
  const receiverUrl = () => receiver!.line.trim()
  /** One build per ref: `. .+telemetry` build the working tree once. */
  const built = new Map<string, string>()
  try {
    for (const [index, spec] of refs.entries()) {
      const keys = keyOptions(spec, limitsUrl, receiverUrl)
      const { ref } = keys
      let entry = built.get(ref)
      if (ref === "hop") {
        // The bare Node hop (bench/node-hop.ts), the floor issue 29's goals are ratios to.
      } else if (entry === undefined) {
        const refDir = join(dir, `ref-${index}`)
        mkdirSync(refDir)
        const tree = ref === "." ? root : checkoutRef(ref, refDir)
        entry = buildTree(tree, join(dir, `dist-${index}`))
        built.set(ref, entry)
      }
      const out = join(dir, `cg-${index}`)
      mkdirSync(out)
      const wrap = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes", ...(keys.workers === undefined ? [] : ["--trace-children=yes"]), `--callgrind-out-file=${out}/cg.%p`]
      const gateway = ref === "hop" ? await startHop(dir, index, upstream, cpu, wrap) : await startGateway(dir, `gateway-${index}`, upstream, {
        entry,
        extra: keys.extra,
        provider: keys.provider,
        ...(keys.telemetry === undefined ? {} : { telemetry: keys.telemetry }),
        env: keys.env,
        ...(keys.workers === undefined ? {} : { server: `workers = ${keys.workers}` }),
        cpu,
        wrap
      })
      try {
        if (keys.workers !== undefined) await waitForWorkers(gateway.log, keys.workers)
        // A single process is counted as worker 0 over every request; a cluster's workers each over its own.
        const pids = keys.workers === undefined ? new Map([[0, gateway.child.pid!]]) : workerPids(gateway.log)
        if (kinds.includes("json")) await requests(gateway.url, pools, false, warmup, keys, concurrency)
        if (kinds.includes("stream")) await requests(gateway.url, pools, true, warmup, keys, concurrency)
        const row: Record<string, unknown> = { build: spec, concurrency }
        let dump = 0
        for (const stream of [false, true]) {
          if (!kinds.includes(stream ? "stream" : "json")) continue
          dump++
          await sleep(1_000) // the warm-up's log lines are written
          const from = statSync(gateway.log).size
          for (const pid of pids.values()) callgrind(pid, "--instr=on")
          const done = await requests(gateway.url, pools, stream, count, keys, concurrency)
          for (const pid of pids.values()) callgrind(pid, "--instr=off")
          for (const pid of pids.values()) callgrind(pid, "--dump")
          await sleep(2_000)
          const byWorker = keys.workers === undefined ? new Map([[0, done]]) : requestsByWorker(gateway.log, from)
          const kind = stream ? "stream" : "json"
          let all = 0
          let main = 0
          for (const [worker, pid] of pids) {
            const totals = dumpTotals(out, pid, dump)
            all += totals.all
            main += totals.main
            if (keys.workers !== undefined) {
              const served = byWorker.get(worker) ?? Number.NaN
              row[`${kind}_worker_${worker}`] = Math.round(totals.all / served)
              row[`${kind}_main_thread_worker_${worker}`] = Math.round(totals.main / served)
            }
          }
          row[kind] = Math.round(all / done)
          row[`${kind}_main_thread`] = Math.round(main / done)
        }
        rows.push(row)
        process.stdout.write(`${JSON.stringify(row)}\n`)
      } finally {
        await pools.forget(gateway.url)
        await stopProcess(gateway.child)
      }
    }
  } finally {
    await pools.close()
    await stopProcess(upstreamProcess.child)
    if (receiver !== undefined) await stopProcess(receiver.child)
    if (process.env.KEEP === undefined) rmSync(dir, { recursive: true, force: true })
  }
  console.log(`instructions per request (${warmup} requests of warm-up, ${count} counted, of each kind)`)
  console.table(rows)
  // The telemetry goal (issue 29): each `+telemetry` build over the same ref with telemetry off. A build
  // named more than once (`. .+telemetry . .+telemetry`: fresh gateways, rows apart) counts as its mean.
  const mean = (build: string, column: string): number => {
    const of = rows.filter((row) => row.build === build)
    return of.reduce((sum, row) => sum + (row[column] as number), 0) / of.length
  }
  for (const build of new Set(rows.map((row) => String(row.build)))) {
    const [ref, suffix] = build.split("+")
    if (suffix === undefined || !suffix.startsWith("telemetry") || !rows.some((row) => row.build === ref)) continue
    // -none and -trace are parts of the figures (unsampled, sampled without GenAI), not goals of their own.
    const goal = suffix.startsWith("telemetry-all") || suffix.startsWith("telemetry-trace") ? 25 : 3
    const over = (column: string) => {
      const percent = Math.round((mean(build, column) / mean(ref, column) - 1) * 1000) / 10
      return `${percent >= 0 ? "+" : ""}${percent} %${percent <= goal ? "" : " (over)"}`
    }
    const runs = rows.filter((row) => row.build === build).length
    console.log(`${build} over ${ref} (goal <= ${goal} %${runs > 1 ? `, means of ${runs} runs each` : ""}): json ${over("json")} (main thread ${over("json_main_thread")}), stream ${over("stream")} (main thread ${over("stream_main_thread")})`)
  }
}

if (import.meta.main) {
  await main(process.argv.slice(2))
  process.exit(0)
}
