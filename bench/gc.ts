/**
 * `node bench/gc.ts REF… [--stream] [--concurrency N] [--count N]`: what each
 * build's requests cost the garbage collector. A ref is a git ref or `.` for
 * the working tree, built as bench/compare.ts builds it and run with
 * `npm start`'s flags plus `--trace-gc-nvp`; after a warm-up, `--count`
 * requests (6,000) at `--concurrency` in flight (32), JSON or stream, and from
 * the GC lines of that window: CPU per request, scavenges, full GCs, KB
 * allocated and KB promoted per request, KB surviving each scavenge, and GC
 * pause per 1,000 requests.
 *
 * Promoted per request is the figure to watch on the request path: the bare
 * Node hop promotes ~0.1 KB per request, and a request whose state is kept
 * past its end (a closure born in the old generation, old garbage pointing at
 * young objects) promotes kilobytes and brings full GCs. Run it at
 * `--concurrency 1` to tell such retention from requests merely alive across
 * two scavenges: one request in flight cannot outlive two of them.
 *
 * A ref may end in `+telemetry`, `+telemetry-all`, `+telemetry-none` or
 * `+telemetry-trace` (as in bench/instructions.ts): the gateway exports to an
 * OTLP receiver on core 1, and the row says what telemetry adds to the GC.
 * The first telemetry row of a run reads ~3.6 KB promoted per request and a
 * few full GCs more, whichever build it is (seen five times on 2026-11-27:
 * the receiver warming up holds exports in flight longer); name a throwaway
 * telemetry ref first.
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { buildTree, checkoutRef } from "./compare.ts"
import { closedLoop, cpuMicros, Pools, root, round, sleep, startProcess, stopProcess } from "./lib.ts"
import { chatScenario, startGateway, START_NODE_FLAGS, telemetrySections } from "./performance.ts"

const option = (argv: ReadonlyArray<string>, name: string, fallback: number): number => {
  const at = argv.indexOf(name)
  return at === -1 ? fallback : Number(argv[at + 1])
}

/** A numeric field of a `--trace-gc-nvp` line. */
const field = (line: string, name: string): number => Number(new RegExp(`\\b${name}=([\\d.]+)`).exec(line)?.[1] ?? 0)

const main = async (argv: ReadonlyArray<string>) => {
  const refs = argv.filter((arg, i) => !arg.startsWith("--") && !["--concurrency", "--count"].includes(argv[i - 1] ?? ""))
  const stream = argv.includes("--stream")
  const concurrency = option(argv, "--concurrency", 32)
  const count = option(argv, "--count", 6_000)
  const dir = mkdtempSync(join(tmpdir(), "gateway-gc-"))
  const upstreamProcess = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], "1", dir, "upstream")
  const upstream = JSON.parse(upstreamProcess.line).url as string
  const pools = new Pools(64)
  const receiver = refs.some((spec) => spec.includes("+telemetry")) ? await startProcess(["bench/telemetry.ts", "--receiver"], "1", dir, "otlp-receiver") : undefined
  const rows: Array<Record<string, unknown>> = []
  try {
    const built = new Map<string, string>()
    for (const [index, spec] of refs.entries()) {
      const [ref, suffix] = spec.split("+")
      const which = suffix === undefined ? undefined : /^telemetry(?:-(all|none|trace))?$/.exec(suffix)?.[1] ?? (suffix === "telemetry" ? "defaults" : undefined)
      if (suffix !== undefined && which === undefined) throw new Error(`unknown suffix +${suffix}`)
      let entry = built.get(ref)
      if (entry === undefined) {
        const refDir = join(dir, `ref-${index}`)
        mkdirSync(refDir)
        entry = buildTree(ref === "." ? root : checkoutRef(ref, refDir), join(dir, `dist-${index}`))
        built.set(ref, entry)
      }
      const telemetry = which === undefined || receiver === undefined ? undefined : telemetrySections(which as "defaults", receiver.line.trim())
      const gateway = await startGateway(dir, `gateway-${index}`, upstream, { entry, nodeFlags: [...START_NODE_FLAGS, "--trace-gc-nvp"], ...(telemetry === undefined ? {} : { telemetry }) })
      const log = join(dir, `gateway-${index}.log`)
      const pid = gateway.child.pid!
      const scenario = chatScenario("gateway", gateway.url, stream)
      try {
        await closedLoop(pools.for(gateway.url), scenario, 4_000, concurrency)
        await sleep(300)
        const from = statSync(log).size
        const cpuBefore = cpuMicros(pid)
        const run = await closedLoop(pools.for(gateway.url), scenario, count, concurrency)
        const cpu = cpuMicros(pid) - cpuBefore
        const lines = readFileSync(log, "utf8").slice(from).split("\n").filter((line) => line.includes(" gc="))
        const scavenges = lines.filter((line) => / gc=s /.test(line))
        const sum = (of: ReadonlyArray<string>, name: string) => of.reduce((total, line) => total + field(line, name), 0)
        const row = {
          build: spec,
          kind: stream ? "stream" : "json",
          in_flight: concurrency,
          cpu_us_per_request: Math.round(cpu / run.requests),
          scavenges: scavenges.length,
          full_gcs: lines.length - scavenges.length,
          allocated_kb_per_request: round(sum(lines, "allocated") / 1024 / run.requests, 1),
          promoted_kb_per_request: round(sum(scavenges, "promoted") / 1024 / run.requests, 2),
          survived_kb_per_scavenge: Math.round(sum(scavenges, "new_space_survived") / 1024 / Math.max(1, scavenges.length)),
          gc_pause_ms_per_1000: round((1000 * sum(lines, "pause")) / run.requests, 1)
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
    rmSync(dir, { recursive: true, force: true })
  }
  console.table(rows)
}

if (import.meta.main) {
  await main(process.argv.slice(2))
  process.exit(0)
}
