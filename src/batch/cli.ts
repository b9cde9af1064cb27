/**
 * `gateway batch INPUT.jsonl --out OUTPUT.jsonl [--concurrency N]
 * [--config PATH] [--project P] [--env E]`: the command line around
 * `runBatch`. Exit codes: 0 when the input was read to its end (failed lines
 * are in the output), 130 when stopped by Ctrl-C, 2 for usage errors, 1 when
 * the job could not start.
 */
import { Cause, Effect, Exit } from "effect"
import { existsSync } from "node:fs"
import { configPath } from "../config/index.ts"
import { gatewayLayer } from "../index.ts"
import { countLines } from "./lines.ts"
import { Progress } from "./progress.ts"
import { failedCount, runBatch } from "./run.ts"
import type { BatchSummary } from "./run.ts"

const BATCH_USAGE = `usage: gateway batch INPUT.jsonl --out OUTPUT.jsonl [--concurrency N] [--config PATH] [--project P] [--env E]

  Runs every line of INPUT (OpenAI Batch API or Anthropic Message Batches
  format, detected per line) through the gateway's routing, and writes one
  answer line per request to OUTPUT, in the line's own format. Re-running
  with the same OUTPUT skips what is already answered. Ctrl-C finishes the
  requests in flight and stops.

  --concurrency N   requests in flight (default 8)
  --config PATH     configuration (default: $GATEWAY_CONFIG or config/gateway.toml)
  --project P       x-gw-project-id of every request (multi-tenant mode)
  --env E           x-gw-environment of every request`

interface Args {
  readonly input: string
  readonly output: string
  readonly concurrency: number
  readonly config: string | undefined
  readonly project: string | undefined
  readonly env: string | undefined
}

const parseArgs = (argv: ReadonlyArray<string>): Args | string => {
  let input: string | undefined
  const flags: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg.startsWith("--")) {
      const name = arg.slice(2)
      if (!["out", "concurrency", "config", "project", "env"].includes(name)) return `unknown option ${arg}`
      const value = argv[++i]
      if (value === undefined) return `${arg} needs a value`
      flags[name] = value
    } else if (input === undefined) {
      input = arg
    } else {
      return `unexpected argument ${arg}`
    }
  }
  if (input === undefined) return "missing INPUT"
  if (flags.out === undefined) return "missing --out OUTPUT"
  const concurrency = flags.concurrency === undefined ? 8 : Number(flags.concurrency)
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) return "--concurrency must be a whole number from 1 to 10000"
  return { input, output: flags.out, concurrency, config: flags.config, project: flags.project, env: flags.env }
}

const summaryText = (summary: BatchSummary, seconds: number): string => {
  const failed = failedCount(summary)
  const lines = [
    `batch ${summary.stopped ? "stopped" : "done"} in ${seconds.toFixed(1)}s: ${summary.succeeded} succeeded, ${failed} failed, ${summary.badLines} bad input lines${summary.skipped > 0 ? `, ${summary.skipped} already done` : ""}`,
    `tokens: ${summary.inputTokens} in, ${summary.outputTokens} out`
  ]
  const kinds = Object.entries(summary.failed).sort((a, b) => b[1] - a[1])
  if (kinds.length > 0) lines.push(`failed by classification: ${kinds.map(([kind, n]) => `${kind} ${n}`).join(", ")}`)
  return lines.join("\n")
}

/** Runs the command; resolves with the exit code. */
export const runBatchCli = async (argv: ReadonlyArray<string>): Promise<number> => {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${BATCH_USAGE}\n`)
    return 0
  }
  const args = parseArgs(argv)
  if (typeof args === "string") {
    process.stderr.write(`gateway batch: ${args}\n${BATCH_USAGE}\n`)
    return 2
  }
  if (!existsSync(args.input)) {
    process.stderr.write(`gateway batch: no such file: ${args.input}\n`)
    return 1
  }
  const total = await countLines(args.input)
  const headers: Record<string, string> = {}
  if (args.project !== undefined) headers["x-gw-project-id"] = args.project
  if (args.env !== undefined) headers["x-gw-environment"] = args.env

  let progress: Progress | undefined
  const job = runBatch({
    input: args.input,
    output: args.output,
    concurrency: args.concurrency,
    headers,
    note: (text) => (progress === undefined ? process.stderr.write(`${text}\n`) : progress.note(text))
  })
  progress = new Progress(total, () => ({ done: job.summary.succeeded + failedCount(job.summary) + job.summary.badLines, failed: failedCount(job.summary), skipped: job.summary.skipped }), process.stderr)

  let interrupts = 0
  const onInterrupt = () => {
    interrupts++
    if (interrupts === 1) {
      job.stop()
      progress?.note("stopping: finishing the requests in flight (Ctrl-C again to quit at once; the output stays valid)")
    } else {
      process.exit(130)
    }
  }
  process.on("SIGINT", onInterrupt)
  process.on("SIGTERM", onInterrupt)
  const started = performance.now()
  const exit = await Effect.runPromiseExit(job.program.pipe(Effect.provide(gatewayLayer({ file: configPath(args.config, process.env) }))))
  process.off("SIGINT", onInterrupt)
  process.off("SIGTERM", onInterrupt)
  progress.stop()
  if (Exit.isFailure(exit)) {
    const error = Cause.squash(exit.cause)
    process.stderr.write(`gateway batch: ${error instanceof Error ? error.message : Cause.pretty(exit.cause)}\n`)
    return 1
  }
  process.stderr.write(`${summaryText(exit.value, (performance.now() - started) / 1000)}\n`)
  return exit.value.stopped ? 130 : 0
}
