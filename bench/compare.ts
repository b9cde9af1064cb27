/**
 * `npm run bench -- --compare [REF]` (or `node bench/compare.ts [REF]`): the
 * working tree against a git ref (default `HEAD`), two builds side by side in
 * one run, so a change on the request path is measured beside its base on the
 * same machine in the same minutes.
 *
 * Both trees are built as `npm start` builds them (each tree's own
 * `scripts/build.ts --outdir`; the ref's source comes from `git archive` and
 * builds against this checkout's node_modules) and run with `npm start`'s Node
 * flags, both pinned to core 0, one loaded at a time. Rounds interleave the
 * builds (A B, then B A, …) so a slow spell of the machine does not land on one
 * build alone; each figure is the median over the rounds, and the ratio is
 * new ÷ base.
 *
 * Figures per build: those of `measureLoad` (bench/performance.ts: CPU per
 * request and requests/s at full load, CPU per request, p50 and p99 at
 * 500 req/s, JSON and stream), and resident memory with open streams
 * (`freshGatewayMemory`: a fresh gateway, 300 or 1,000 streams held open
 * through a slow upstream: RSS with all open, KiB per open stream, KiB per
 * added stream).
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { interleavedRounds, median, root, round, stopProcess } from "./lib.ts"
import type { RoundFigures } from "./lib.ts"
import { freshGatewayMemory, measureLoad, startGateway, startUpstreams, warmUp } from "./performance.ts"
import type { Gateway } from "./performance.ts"

interface Build {
  readonly label: string
  /** The bundle's entry, an absolute path. */
  readonly entry: string
}

/** Builds the tree at `tree` into `outdir` with that tree's own build script; returns the bundle's entry. */
export const buildTree = (tree: string, outdir: string): string => {
  const built = spawnSync(process.execPath, [join(tree, "scripts/build.ts"), "--outdir", outdir], { cwd: tree, stdio: "inherit" })
  if (built.status !== 0) throw new Error(`the build of ${tree} failed`)
  const entry = join(outdir, "gateway.mjs")
  if (!existsSync(entry)) throw new Error(`the build of ${tree} wrote no ${entry}`)
  return entry
}

/** The source of `ref` in a fresh directory, with this checkout's node_modules. */
export const checkoutRef = (ref: string, dir: string): string => {
  const tree = join(dir, "base-src")
  mkdirSync(tree)
  const archive = execFileSync("git", ["archive", "--format=tar", ref], { cwd: root, maxBuffer: 1 << 30 })
  execFileSync("tar", ["-x", "-C", tree], { input: archive })
  symlinkSync(join(root, "node_modules"), join(tree, "node_modules"))
  return tree
}

export interface CompareOptions {
  readonly ref: string
  readonly rounds: number
  readonly quick: boolean
}

export const runCompare = async (options: CompareOptions) => {
  const plan = { requests: options.quick ? 3_000 : 10_000, pacedSeconds: options.quick ? 2 : 5, full: true, paced: true }
  const streams = options.quick ? 300 : 1_000
  const dir = mkdtempSync(join(tmpdir(), "gateway-compare-"))
  const sha = execFileSync("git", ["rev-parse", "--short", options.ref], { cwd: root, encoding: "utf8" }).trim()
  const builds: ReadonlyArray<Build> = [
    { label: `base (${options.ref} ${sha})`, entry: buildTree(checkoutRef(options.ref, dir), join(dir, "base-dist")) },
    { label: "new (working tree)", entry: buildTree(root, join(dir, "new-dist")) }
  ]
  const { ctx, stop } = await startUpstreams(dir, options.quick)
  const gateways: Array<Gateway> = []
  let figures: Array<RoundFigures> = []
  try {
    for (const [index, build] of builds.entries()) gateways.push(await startGateway(dir, `gateway-${index}`, ctx.upstream, { entry: build.entry }))
    // Warm both up (JIT, pools) before anything is counted.
    for (const gateway of gateways) await warmUp(ctx.pools.for(gateway.url), gateway.url)
    figures = await interleavedRounds(builds, options.rounds, async (build, index) => {
      const gateway = gateways[index]
      const load = await measureLoad(ctx.pools.for(gateway.url), gateway.url, gateway.child.pid!, plan)
      const memory = await freshGatewayMemory(ctx, `gateway-memory-${index}`, { entry: build.entry }, streams)
      return { ...load, kib_per_open_stream: memory.kib_per_open_stream, kib_per_added_stream: memory.kib_per_added_stream, rss_with_open_streams_mib: memory.rss_with_open_streams_mib }
    }, (r) => process.stdout.write(`round ${r + 1}/${options.rounds} done\n`))
  } finally {
    for (const gateway of gateways) {
      await ctx.pools.forget(gateway.url)
      await stopProcess(gateway.child)
    }
    await ctx.pools.close()
    await stop()
    rmSync(dir, { recursive: true, force: true })
  }
  const names = [...figures[0].keys()]
  const rows = names.map((name) => {
    const base = median(figures[0].get(name)!)
    const next = median(figures[1].get(name)!)
    return { figure: name, base, new: next, ratio: round(next / base, 3), base_rounds: figures[0].get(name)!.join(" "), new_rounds: figures[1].get(name)!.join(" ") }
  })
  return { date: new Date().toISOString(), ref: options.ref, sha, rounds: options.rounds, node: process.version, builds: builds.map((build) => build.label), rows }
}

export const printCompare = (result: Awaited<ReturnType<typeof runCompare>>): void => {
  console.log(`${result.builds[1]} vs ${result.builds[0]}, median of ${result.rounds} interleaved rounds`)
  console.table(result.rows.map(({ figure, base, new: next, ratio }) => ({ figure, base, new: next, ratio })))
}

/** `[REF] [--rounds N] [--quick]` after `--compare`. */
export const compareOptionsFrom = (argv: ReadonlyArray<string>): CompareOptions => {
  const at = argv.indexOf("--compare")
  const next = argv[at + 1]
  const roundsAt = argv.indexOf("--rounds")
  const quick = argv.includes("--quick")
  return {
    ref: next !== undefined && !next.startsWith("--") ? next : "HEAD",
    rounds: roundsAt === -1 ? (quick ? 2 : 4) : Number(argv[roundsAt + 1]),
    quick
  }
}

export const compareMain = async (argv: ReadonlyArray<string>): Promise<void> => {
  const result = await runCompare(compareOptionsFrom(argv))
  printCompare(result)
  writeFileSync(join(root, "bench", "compare.json"), `${JSON.stringify(result, null, 2)}\n`)
  console.log("written bench/compare.json")
}

if (import.meta.main) {
  await compareMain(["--compare", ...process.argv.slice(2)])
  process.exit(0)
}
