/**
 * What the benchmarks share: child processes pinned to a core, the load
 * generator (closed loop at fixed concurrency, open loop at a fixed rate),
 * and readings from /proc (CPU time, resident memory).
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { spawn, spawnSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { closeSync, openSync, readFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"

export const root = new URL("..", import.meta.url).pathname
export const DEADLINE_MS = 120_000

/**
 * With two or more cores and `taskset`, the gateway gets a core of its own
 * (the upstream and the load generator share the other), so the figures do
 * not depend on how the scheduler mixes three busy processes.
 */
export const PIN = cpus().length >= 2 && spawnSync("taskset", ["-c", "0", "true"]).status === 0

export interface Running {
  readonly child: ChildProcess
  readonly line: string
  /** The file its stdout goes to. */
  readonly log: string
}

/**
 * Starts a child whose stdout goes to a file (a log pipe drained by this busy
 * load generator would make the child's synchronous stdout writes wait) and
 * resolves with the first line it writes that `ready` accepts.
 * `cpu` pins it (`"0"`, `"0,1"`); `node` gives Node flags before the script.
 */
export const startProcess = (
  args: ReadonlyArray<string>,
  cpu: string | undefined,
  dir: string,
  name: string,
  options: {
    readonly ready?: (line: string) => boolean
    readonly node?: ReadonlyArray<string>
    readonly env?: Record<string, string>
    /** A command that runs Node (`valgrind …`), before Node and its flags. */
    readonly wrap?: ReadonlyArray<string>
  } = {}
): Promise<Running> =>
  new Promise((resolve, reject) => {
    const argv = [...(options.wrap ?? []), process.execPath, ...(options.node ?? []), ...args]
    const [command, all] = PIN && cpu !== undefined ? ["taskset", ["-c", cpu, ...argv]] : [argv[0], argv.slice(1)]
    const logPath = join(dir, `${name}.log`)
    const out = openSync(logPath, "w")
    const child = spawn(command, all, { cwd: root, env: { ...process.env, ...options.env }, stdio: ["ignore", out, "inherit"] })
    closeSync(out)
    const ready = options.ready ?? (() => true)
    const deadline = Date.now() + (options.wrap === undefined ? 30_000 : 120_000)
    const poll = setInterval(() => {
      const complete = readFileSync(logPath, "utf8").split("\n").slice(0, -1)
      const line = complete.find(ready)
      if (line !== undefined) {
        clearInterval(poll)
        resolve({ child, line, log: logPath })
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

/** Stops a child with SIGTERM (SIGKILL after 10 s) and waits for it. */
export const stopProcess = async (child: ChildProcess): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
  await exited
  clearTimeout(timer)
}

/** User + system CPU time of a process, in microseconds. */
export const cpuMicros = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the command).
  const ticks = Number(fields[11]) + Number(fields[12])
  return (ticks * 1_000_000) / 100
}

/**
 * Runs `run` and returns its result with the CPU time `pid` spent per request
 * meanwhile (`tree`: the process and all its children, as in workers mode).
 */
export const withCpu = async <A>(pid: number, run: () => Promise<A>, requests: (result: A) => number, tree = false) => {
  const read = tree ? treeCpuMicros : cpuMicros
  const before = read(pid)
  const result = await run()
  return { result, cpuPerRequest: Math.round((read(pid) - before) / requests(result)) }
}

/** Requests counted by a closed or paced loop. */
export const served = (run: { readonly requests: number }): number => run.requests

/** The children of a process (the workers of a cluster primary). */
export const childrenOf = (pid: number): Array<number> => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter((s) => s !== "").map(Number)
  } catch {
    return []
  }
}

/** CPU time of a process and all its children, in microseconds. */
export const treeCpuMicros = (pid: number): number => childrenOf(pid).reduce((sum, child) => sum + treeCpuMicros(child), cpuMicros(pid))

/**
 * Resident memory now (`VmRSS`) and at its peak (`VmHWM`), in KiB as the
 * kernel counts it. Figures divided by a count of streams take this, not the
 * MiB below: rounded to MiB first, 300 streams read in steps of 3.4 KiB each.
 */
export const memoryKiB = (pid: number): { readonly rss: number; readonly peak: number } => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return { rss: kib("VmRSS"), peak: kib("VmHWM") }
}

/** Resident memory now (`VmRSS`) and at its peak (`VmHWM`), in MiB. */
export const memoryMiB = (pid: number): { readonly rss: number; readonly peak: number } => {
  const { rss, peak } = memoryKiB(pid)
  return { rss: Math.round(rss / 1024), peak: Math.round(peak / 1024) }
}

export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

export const round = (value: number, digits = 3): number => Math.round(value * 10 ** digits) / 10 ** digits

export interface Scenario {
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
export const oneRequest = (pool: Pool, scenario: Scenario): Promise<number> =>
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

export interface ClosedRun {
  readonly requests: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
}

/** `count` requests at fixed concurrency (or until `seconds` pass): throughput and latency. */
export const closedLoop = async (pool: Pool, scenario: Scenario, count: number, concurrency: number, seconds = DEADLINE_MS / 1000): Promise<ClosedRun> => {
  const latencies: Array<number> = []
  let issued = 0
  const deadline = Date.now() + Math.min(seconds * 1000, DEADLINE_MS)
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (issued < count && Date.now() < deadline) {
      issued++
      latencies.push(await oneRequest(pool, scenario))
    }
  }))
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return { requests: latencies.length, rps: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

export interface PacedRun {
  /** Requests completed. */
  readonly requests: number
  readonly p50: number
  readonly p99: number
  /** Requests completed per second of the run (the requested rate when the server keeps up). */
  readonly achievedRps: number
  /** The median latency of each second of the run. */
  readonly p50BySecond: ReadonlyArray<number>
}

/**
 * Requests started at a fixed rate, whatever the latency (an open loop): the
 * latency a user sees at that load. A request is due at `start + i / rate`;
 * its latency counts from when it was due, so a stalled server or a late
 * generator shows up in the figures instead of slowing the schedule.
 */
export const pacedLoop = async (pool: Pool, scenario: Scenario, rps: number, seconds: number): Promise<PacedRun> => {
  const total = Math.round(rps * seconds)
  const interval = 1000 / rps
  const bySecond: Array<Array<number>> = Array.from({ length: Math.ceil(seconds) }, () => [])
  const all: Array<number> = []
  const started = performance.now()
  const inFlight: Array<Promise<void>> = []
  for (let i = 0; i < total && performance.now() - started < DEADLINE_MS; i++) {
    const due = started + i * interval
    const wait = due - performance.now()
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    const lateBy = Math.max(0, performance.now() - due)
    const second = Math.min(bySecond.length - 1, Math.floor((i * interval) / 1000))
    inFlight.push(oneRequest(pool, scenario).then((ms) => {
      all.push(ms + lateBy)
      bySecond[second].push(ms + lateBy)
    }))
  }
  await Promise.all(inFlight)
  const elapsed = (performance.now() - started) / 1000
  all.sort((a, b) => a - b)
  return {
    requests: all.length,
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    achievedRps: all.length / elapsed,
    p50BySecond: bySecond.map((list) => round(percentile(list.sort((a, b) => a - b), 50)))
  }
}

/** One undici pool per origin, forgotten when its server stops (a later server may get the port). */
export class Pools {
  private readonly pools = new Map<string, Pool>()
  private readonly connections: number
  constructor(connections: number) {
    this.connections = connections
  }
  for(origin: string): Pool {
    let pool = this.pools.get(origin)
    if (pool === undefined) {
      pool = new Pool(origin, { connections: this.connections })
      this.pools.set(origin, pool)
    }
    return pool
  }
  async forget(origin: string): Promise<void> {
    const pool = this.pools.get(origin)
    this.pools.delete(origin)
    await pool?.destroy()
  }
  async close(): Promise<void> {
    for (const pool of this.pools.values()) await pool.close()
    this.pools.clear()
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Each figure's values, one a round (figure name → values in round order). */
export type RoundFigures = Map<string, Array<number>>

/**
 * Measures every target once a round, one at a time, reversing the order each
 * round (A B C, then C B A, …), so a slow spell of the machine, or the warmth
 * a target leaves behind, does not land on one target alone. Returns each
 * target's figures, one value a round; read them with `median`.
 *
 * Bounded by `rounds` and by what `measure` bounds.
 */
export const interleavedRounds = async <T>(
  targets: ReadonlyArray<T>,
  rounds: number,
  measure: (target: T, index: number, round: number) => Promise<Record<string, number>>,
  onRound?: (round: number) => void
): Promise<Array<RoundFigures>> => {
  const figures = targets.map((): RoundFigures => new Map())
  for (let r = 0; r < rounds; r++) {
    const order = targets.map((_, index) => index)
    if (r % 2 === 1) order.reverse()
    for (const index of order) {
      for (const [name, value] of Object.entries(await measure(targets[index], index, r))) {
        const list = figures[index].get(name) ?? []
        list.push(value)
        figures[index].set(name, list)
      }
    }
    onRound?.(r)
  }
  return figures
}
