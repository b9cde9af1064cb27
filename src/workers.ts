/**
 * Workers mode (`[server] workers = N | "auto"`): N gateway processes share
 * the port through `node:cluster` (the primary accepts connections and hands
 * them out in turn), each a full gateway with its own pools and stages. The
 * primary only supervises:
 *
 * - a worker that dies is replaced (after a second when it died young, so a
 *   worker that cannot start does not spin);
 * - SIGTERM or SIGINT is passed to every worker, which drains within
 *   `shutdown_grace_secs` like a single gateway; the primary exits 0 once they
 *   have, or kills what is left a few seconds after the grace period.
 * - SIGHUP is passed to every worker, which reloads its configuration as a
 *   single gateway does (src/gateway.ts); the primary keeps its own (the
 *   worker count and the grace period change on restart).
 *
 * Every log line carries the worker number; the primary logs starts, deaths
 * and restarts. With `[metrics]` on, the primary sums the workers' metrics
 * for whichever worker a scrape reaches (src/infra/metrics-cluster.ts).
 *
 * `node:cluster` (and `child_process` under it, ~3 MiB of resident memory) is
 * loaded only by a primary that forks: a single gateway never loads it.
 */
import type { Worker } from "node:cluster"
import { workerCountOf } from "./config/index.ts"
import type { GatewaySettings } from "./config/index.ts"
import type { JsonLog } from "./infra/log.ts"
import { servingSummary } from "./startup-summary.ts"

/** How many workers a configuration asks for. */
export const workerCount = (settings: GatewaySettings): number => workerCountOf(settings.file)

/**
 * This process is a worker the primary forked: it carries the worker number
 * the primary gave it and an IPC channel to the primary. (Node's own marker,
 * `NODE_UNIQUE_ID`, is gone from the environment once the worker starts, and
 * `cluster.isWorker` would load the module.)
 */
export const isClusterWorker = (): boolean => process.env.GATEWAY_WORKER_ID !== undefined && process.send !== undefined

/** The worker number of this process in workers mode (from 1), or undefined. */
export const workerNumber = (): number | undefined => (isClusterWorker() ? Number(process.env.GATEWAY_WORKER_ID) : undefined)

const YOUNG_MS = 5_000
const RESTART_DELAY_MS = 1_000
const KILL_AFTER_GRACE_MS = 5_000

/** Runs the primary: forks the workers and supervises them until a signal stops them all. */
export const superviseWorkers = async (settings: GatewaySettings, log: JsonLog): Promise<void> => {
  const { default: cluster } = await import("node:cluster")
  const count = workerCount(settings)
  const started = new Map<Worker, { readonly id: number; readonly at: number }>()
  let stopping = false

  const fork = (id: number) => {
    const worker = cluster.fork({ GATEWAY_WORKER_ID: String(id) })
    started.set(worker, { id, at: Date.now() })
    log.log("info", "worker started", { worker: id, pid: worker.process.pid })
  }

  cluster.on("exit", (worker, code, signal) => {
    const info = started.get(worker)
    started.delete(worker)
    if (info === undefined) return
    if (stopping) {
      if (started.size === 0) {
        log.flush()
        process.exit(0)
      }
      return
    }
    log.log("warn", "worker died", { worker: info.id, pid: worker.process.pid, code, signal })
    const young = Date.now() - info.at < YOUNG_MS
    setTimeout(() => {
      if (!stopping) fork(info.id)
    }, young ? RESTART_DELAY_MS : 0)
  })

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    log.log("info", "shutting down", { workers: started.size, signal })
    for (const worker of started.keys()) worker.process.kill(signal)
    if (started.size === 0) process.exit(0)
    const deadline = setTimeout(() => {
      for (const worker of started.keys()) worker.process.kill("SIGKILL")
      log.flush()
      process.exit(0)
    }, settings.file.server.shutdown_grace_secs * 1000 + KILL_AFTER_GRACE_MS)
    deadline.unref()
  }
  process.on("SIGTERM", () => stop("SIGTERM"))
  process.on("SIGINT", () => stop("SIGINT"))
  // A reload is each worker's own: it reads the file and logs what it did.
  process.on("SIGHUP", () => {
    if (stopping) return
    log.log("info", "reloading", { workers: started.size })
    for (const worker of started.keys()) worker.process.kill("SIGHUP")
  })

  // Metrics: a scrape reaching any worker answers the sum over all of them.
  if (settings.file.metrics.enabled) (await import("./infra/metrics-cluster.ts")).servePrimaryMetrics(cluster)
  log.log("info", "workers", { count })
  log.log("info", "serving", servingSummary(settings))
  for (let id = 1; id <= count; id++) fork(id)
}
