/**
 * `gateway batch`: a file of requests run through the library's `Gateway`
 * (the same plans, retries, guardrails, cache and telemetry as served
 * requests), with a bounded number in flight, each answer written to the
 * output as it completes.
 *
 * Details
 * - Memory stays flat: the input is read only as fast as requests start, and
 *   answers are written (one synchronous write per line, so a completed line
 *   is on disk) as they arrive. Ids are remembered as 8-byte fingerprints.
 * - Resumable: ids already in the output are skipped; a partial last line
 *   left by a kill is cut off first (`repairOutput`), and that request runs again.
 * - `stop()` (Ctrl-C) stops taking lines; the ones in flight finish and are written.
 * - A failing request is an output line like any other; a bad input line is
 *   reported with its number (and, when it has a custom_id, recorded as an
 *   error line); neither stops the job.
 */
import { Effect, Stream } from "effect"
import { closeSync, openSync, writeSync } from "node:fs"
import { Gateway } from "../index.ts"
import { readAnswer } from "../library/Gateway.ts"
import { FingerprintSet } from "./fingerprints.ts"
import { answerLine, classificationOf, errorLine, parseLine, requestOf, tokensOf } from "./formats.ts"
import type { BatchItem } from "./formats.ts"
import { readLines, repairOutput } from "./lines.ts"
import type { Line } from "./lines.ts"

export interface BatchOptions {
  readonly input: string
  readonly output: string
  readonly concurrency: number
  /** Headers every request carries (`x-gw-project-id`, `x-gw-environment`). */
  readonly headers: Readonly<Record<string, string>>
  /** Receives one message per bad input line (`line 12: not JSON`). */
  readonly note: (text: string) => void
}

export interface BatchSummary {
  /** Lines answered 2xx. */
  succeeded: number
  /** Lines answered otherwise, by classification (`x-gw-error-code`, the error code, or `status_<n>`). */
  readonly failed: Record<string, number>
  /** Input lines that could not run (not JSON, unknown url, missing or duplicate custom_id). */
  badLines: number
  /** Lines whose custom_id was already in the output (a resumed job). */
  skipped: number
  inputTokens: number
  outputTokens: number
  /** Whether the job stopped before the end of the input (`stop()`). */
  stopped: boolean
}

export const failedCount = (summary: BatchSummary): number => Object.values(summary.failed).reduce((sum, n) => sum + n, 0)

/** The custom_ids an existing output already answers. */
const answeredIds = async (output: string): Promise<FingerprintSet> => {
  const ids = new FingerprintSet()
  if (!repairOutput(output)) return ids
  for await (const line of readLines(output)) {
    try {
      const id = (JSON.parse(line.text) as { custom_id?: unknown }).custom_id
      if (typeof id === "string") ids.add(id)
    } catch {
      // Not ours: left as it is.
    }
  }
  return ids
}

/** Runs the job; `stop` asks it to finish what is in flight and take no more lines. */
export const runBatch = (options: BatchOptions) => {
  let stopping = false
  const summary: BatchSummary = { succeeded: 0, failed: {}, badLines: 0, skipped: 0, inputTokens: 0, outputTokens: 0, stopped: false }
  const program = Effect.gen(function*() {
    const gateway = yield* Gateway
    const answered = yield* Effect.promise(() => answeredIds(options.output))
    const seen = new FingerprintSet()
    const fd = yield* Effect.acquireRelease(Effect.sync(() => openSync(options.output, "a")), (fd) => Effect.sync(() => closeSync(fd)))
    const write = (line: string) => {
      writeSync(fd, `${line}\n`)
    }
    const fail = (classification: string) => {
      summary.failed[classification] = (summary.failed[classification] ?? 0) + 1
    }

    const run = (item: BatchItem): Effect.Effect<void> =>
      gateway.request(requestOf(item, options.headers)).pipe(
        Effect.flatMap(readAnswer),
        Effect.match({
          onFailure: () => {
            fail("response_cut")
            write(errorLine(item.customId, item.format, "response_cut", "the answer was cut before it was complete"))
          },
          onSuccess: (answer) => {
            write(answerLine(item, answer))
            if (answer.status >= 200 && answer.status < 300) {
              summary.succeeded++
              const tokens = tokensOf(answer.body)
              summary.inputTokens += tokens.input
              summary.outputTokens += tokens.output
            } else {
              fail(classificationOf(answer))
            }
          }
        })
      )

    const handle = (line: Line): Effect.Effect<void> => {
      const parsed = parseLine(line.text)
      const customId = parsed.customId
      if (customId !== undefined && answered.has(customId)) {
        summary.skipped++
        return Effect.void
      }
      if (customId !== undefined && !seen.add(customId)) {
        summary.badLines++
        options.note(`line ${line.number}: duplicate custom_id ${JSON.stringify(customId.slice(0, 200))}`)
        return Effect.void
      }
      if ("bad" in parsed) {
        summary.badLines++
        options.note(`line ${line.number}: ${parsed.bad}`)
        if (customId !== undefined) write(errorLine(customId, parsed.format ?? "openai", "invalid_request", `line ${line.number}: ${parsed.bad}`))
        return Effect.void
      }
      return run(parsed)
    }

    yield* Stream.fromAsyncIterable(readLines(options.input), (error) => error).pipe(
      Stream.takeWhile(() => {
        if (stopping) summary.stopped = true
        return !stopping
      }),
      Stream.mapEffect(handle, { concurrency: options.concurrency, unordered: true }),
      Stream.runDrain,
      Effect.orDie
    )
    return summary
  })
  return {
    program: Effect.scoped(program),
    summary,
    stop: () => {
      stopping = true
    }
  }
}
