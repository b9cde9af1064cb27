/**
 * `node bench/workers-probe.ts [--requests N] [--rounds N] [--warmup N] [--config single,workers,…]`:
 * where a worker's CPU per request goes, beside a single process's (issue 29's
 * workers goal). Each configuration is a gateway as `npm start` runs it, pinned
 * to core 0; the rounds interleave them. For each process (a single gateway, or
 * each worker of a cluster, the primary apart) it reads over a closed loop:
 *
 * - user and system CPU µs per request (`/proc/<pid>/stat`);
 * Every process is first warmed up with `--warmup` requests (15,000; a cluster's
 * gateway gets that many for each worker), as the JIT settles over a process's
 * first ~10,000 requests.
 *
 * - per request, with `perf stat` on the process's threads (software
 *   tracepoints, no hardware counters needed): `epoll_wait`/`epoll_pwait`
 *   calls (each one a turn of the event loop), `write`/`writev` calls, reads,
 *   and the times the main thread was switched out (`sched_switch`); and
 *   requests per event-loop turn.
 *
 * If each worker runs the same code per request as a single process
 * (`node bench/instructions.ts --concurrency 16 . && node bench/instructions.ts
 * .+workers`), what differs here is how the two processes share the core: how
 * many requests a turn of the event loop serves, and what each switch costs.
 *
 * `--close` sends every request on a new connection: the cluster's primary then
 * accepts each one and hands it to a worker (`primary_cpu_us`).
 *
 * Configurations: `single` (workers = 1, `--in-flight` 32), `single16`,
 * `workers` (workers = 2 on core 0, 64 in flight: 32 each), and the same with
 * `pair` (two single-process gateways on core 0, each loaded with 32 in flight
 * at once: the core shared as two workers share it, without a cluster), and
 * `sched_none` (`NODE_CLUSTER_SCHED_POLICY=none`: the primary binds and every
 * worker accepts from the shared socket) or `reuseport` (`[server] reuse_port`,
 * when the build has it).
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { closedLoop, interleavedRounds, median, Pools, round, sleep, stopProcess } from "./lib.ts"
import { chatScenario, requestsByWorker, startGateway, startUpstreams, workerPids } from "./performance.ts"
import type { Gateway } from "./performance.ts"

const option = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : process.argv[at + 1]
}

const REQUESTS = Number(option("--requests", "15000"))
const ROUNDS = Number(option("--rounds", "3"))
/** Requests of warm-up per gateway process (a cluster's gateway gets this many for each worker). */
const WARMUP = Number(option("--warmup", "15000"))
/** `--close`: every request on a new connection (`connection: close`), what the cluster primary hands out per connection. */
const CLOSE = process.argv.includes("--close")
const scenario = (url: string) => chatScenario("gateway", url, false, CLOSE ? { connection: "close" } : {})

interface Configuration {
  readonly name: string
  readonly server: string
  readonly inFlight: number
  readonly cpu: string
  readonly env?: Readonly<Record<string, string>>
  /** Two single-process gateways on the same core, loaded at once (`inFlight` each): no cluster, the core shared. */
  readonly pair?: boolean
}

const CONFIGURATIONS: Record<string, Configuration> = {
  single: { name: "single, 32 in flight", server: "workers = 1", inFlight: 32, cpu: "0" },
  single16: { name: "single, 16 in flight", server: "workers = 1", inFlight: 16, cpu: "0" },
  single64: { name: "single, 64 in flight", server: "workers = 1", inFlight: 64, cpu: "0" },
  workers: { name: "2 workers, core 0, 64 in flight", server: "workers = 2", inFlight: 64, cpu: "0" },
  workers32: { name: "2 workers, core 0, 32 in flight", server: "workers = 2", inFlight: 32, cpu: "0" },
  pair: { name: "2 single gateways, core 0, loaded at once, 32 in flight each", server: "workers = 1", inFlight: 32, cpu: "0", pair: true },
  sched_none: { name: "2 workers SCHED_NONE, core 0, 64 in flight", server: "workers = 2", inFlight: 64, cpu: "0", env: { NODE_CLUSTER_SCHED_POLICY: "none" } },
  reuseport: { name: "2 workers reuse_port, core 0, 64 in flight", server: "workers = 2\nreuse_port = true", inFlight: 64, cpu: "0" }
}

const EVENTS = [
  "syscalls:sys_enter_epoll_wait",
  "syscalls:sys_enter_epoll_pwait",
  "syscalls:sys_enter_epoll_pwait2",
  "syscalls:sys_enter_write",
  "syscalls:sys_enter_writev",
  "syscalls:sys_enter_read",
  "sched:sched_switch"
]

/** user and system CPU time of a process so far, µs. */
const cpuSplit = (pid: number): { readonly user: number; readonly system: number } => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return { user: Number(fields[11]) * 10_000, system: Number(fields[12]) * 10_000 }
}

/** `perf stat` on every thread of `pid` until `stop`; each event's count on the main thread and on all threads. */
const perfStat = (pid: number): { readonly stop: () => Promise<Map<string, { main: number; all: number }>> } => {
  const child: ChildProcess = spawn("perf", ["stat", "--per-thread", "-x", ",", "-e", EVENTS.join(","), "-p", String(pid)], { stdio: ["ignore", "ignore", "pipe"] })
  let text = ""
  child.stderr!.on("data", (chunk: Buffer) => (text += chunk.toString()))
  return {
    stop: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGINT")
      await exited
      const counts = new Map<string, { main: number; all: number }>()
      // Lines: thread-name-tid,count,unit,event,…
      for (const line of text.split("\n")) {
        const fields = line.split(",")
        if (fields.length < 4) continue
        const tid = Number(/-(\d+)$/.exec(fields[0])?.[1])
        const count = Number(fields[1])
        if (Number.isNaN(count)) continue
        const event = fields[3]
        const entry = counts.get(event) ?? { main: 0, all: 0 }
        entry.all += count
        if (tid === pid) entry.main += count
        counts.set(event, entry)
      }
      return counts
    }
  }
}

const main = async () => {
  const wanted = option("--config", "single,workers").split(",")
  const configurations = wanted.map((name) => {
    const configuration = CONFIGURATIONS[name]
    if (configuration === undefined) throw new Error(`no configuration ${name} (${Object.keys(CONFIGURATIONS).join(", ")})`)
    return configuration
  })
  const dir = mkdtempSync(join(tmpdir(), "gateway-workers-probe-"))
  const { ctx, stop } = await startUpstreams(dir, false)
  const pools = new Pools(64)
  // Each configuration's gateways: one, or two for a pair.
  const gateways: Array<Array<Gateway>> = []
  try {
    for (const [index, configuration] of configurations.entries()) {
      const started: Array<Gateway> = []
      for (let n = 0; n < (configuration.pair === true ? 2 : 1); n++) {
        started.push(await startGateway(dir, `gateway-${index}-${n}`, ctx.upstream, { server: configuration.server, cpu: configuration.cpu, env: configuration.env }))
      }
      gateways.push(started)
    }
    await sleep(2_000) // every worker listens
    for (const [index, group] of gateways.entries()) {
      const processes = configurations[index].server.includes("workers = 2") ? 2 : 1
      for (const gateway of group) await closedLoop(pools.for(gateway.url), scenario(gateway.url), WARMUP * processes, configurations[index].inFlight)
    }
    const figures = await interleavedRounds(configurations, ROUNDS, async (configuration, index) => {
      const group = gateways[index]
      const gateway = group[0]
      const cluster = !configuration.server.includes("workers = 1")
      // A pair's two gateways count as workers 1 and 2.
      const pids = cluster ? workerPids(gateway.log) : group.length === 2 ? new Map(group.map((g, n) => [n + 1, g.child.pid!])) : new Map([[0, gateway.child.pid!]])
      await sleep(300)
      const from = statSync(gateway.log).size
      const primary = gateway.child.pid!
      const primaryBefore = cpuSplit(primary)
      const before = new Map([...pids].map(([worker, pid]) => [worker, cpuSplit(pid)]))
      const perf = new Map([...pids].map(([worker, pid]) => [worker, perfStat(pid)]))
      await sleep(300) // perf attached
      const runs = await Promise.all(group.map((g) => closedLoop(pools.for(g.url), scenario(g.url), group.length === 2 ? REQUESTS / 2 : REQUESTS, configuration.inFlight)))
      const run = { requests: runs.reduce((sum, r) => sum + r.requests, 0), rps: runs.reduce((sum, r) => sum + r.rps, 0) }
      const after = new Map([...pids].map(([worker, pid]) => [worker, cpuSplit(pid)]))
      const primaryAfter = cpuSplit(primary)
      const counts = new Map<number, Map<string, { main: number; all: number }>>()
      for (const [worker, probe] of perf) counts.set(worker, await probe.stop())
      await sleep(300)
      const served = cluster ? requestsByWorker(gateway.log, from) : group.length === 2 ? new Map(runs.map((r, n) => [n + 1, r.requests])) : new Map([[0, run.requests]])
      const out: Record<string, number> = { rps: run.rps }
      if (cluster) out.primary_cpu_us = round((primaryAfter.user + primaryAfter.system - primaryBefore.user - primaryBefore.system) / run.requests, 1)
      for (const [worker] of pids) {
        const n = served.get(worker) ?? Number.NaN
        const b = before.get(worker)!
        const a = after.get(worker)!
        const c = counts.get(worker)!
        const per = (event: string, which: "main" | "all" = "main") => (c.get(event)?.[which] ?? 0) / n
        const turns = per("syscalls:sys_enter_epoll_wait") + per("syscalls:sys_enter_epoll_pwait") + per("syscalls:sys_enter_epoll_pwait2")
        const w = `w${worker}`
        out[`${w}_requests`] = n
        out[`${w}_user_us`] = Math.round((a.user - b.user) / n)
        out[`${w}_sys_us`] = Math.round((a.system - b.system) / n)
        out[`${w}_cpu_us`] = Math.round((a.user - b.user + a.system - b.system) / n)
        out[`${w}_loop_turns`] = round(turns, 3)
        out[`${w}_requests_per_turn`] = round(1 / turns, 2)
        out[`${w}_writes`] = round(per("syscalls:sys_enter_write") + per("syscalls:sys_enter_writev"), 3)
        out[`${w}_reads`] = round(per("syscalls:sys_enter_read"), 3)
        out[`${w}_switched_out_main`] = round(per("sched:sched_switch"), 3)
        out[`${w}_switched_out_all_threads`] = round(per("sched:sched_switch", "all"), 3)
      }
      return out
    }, (r) => process.stdout.write(`round ${r + 1}/${ROUNDS} done\n`))
    const rows = configurations.map((configuration, index) => {
      const row: Record<string, unknown> = { configuration: configuration.name }
      for (const [name, list] of figures[index]) row[name] = median(list)
      return row
    })
    console.log(`per request, median of ${ROUNDS} interleaved rounds of ${REQUESTS} requests (JSON, gateway on core 0)`)
    for (const row of rows) console.log(JSON.stringify(row))
    for (const [index, configuration] of configurations.entries()) {
      for (const [name, list] of figures[index]) if (name.endsWith("_cpu_us") || name === "rps") console.log(`${configuration.name} ${name}: ${list.join(" ")}`)
    }
  } finally {
    for (const gateway of gateways.flat()) {
      await pools.forget(gateway.url)
      await stopProcess(gateway.child)
    }
    await pools.close()
    await stop()
  }
}

await main()
process.exit(0)
