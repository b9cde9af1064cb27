/**
 * Structured JSON-lines logging to stdout: one line per request (written by
 * the HTTP layer) plus startup and attempt events. Lines are batched and
 * written once per turn of the event loop (or at 512 lines): a write to a
 * pipe or file is a synchronous syscall in Node, so under load one write
 * carries every line of that turn; when the gateway is idle the line is
 * written before the loop sleeps, so logging never wakes the process on its
 * own (a timer would: each wake-up of an idle process costs more CPU than the
 * request's logging). Shutdown flushes what is left.
 *
 * A slow reader of stdout (a pipe to a log shipper that fell behind) never
 * slows requests and never grows memory without bound: Node queues what the
 * pipe cannot take yet, and past `MAX_BACKLOG_BYTES` queued lines are dropped
 * and counted; once the reader catches up, one `log lines dropped` warning
 * says how many.
 *
 * `format: "pretty"` writes the same records as lines for people
 * (pretty.ts), coloured when asked; JSON lines are unchanged by it.
 *
 * Never pass bodies or credentials here; callers log ids, names and numbers.
 */
import { Context, Layer } from "effect"
import { prettyLine } from "./pretty.ts"

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "none"

/** Bytes a write to a pipe may hold and still be atomic (Linux). */
const PIPE_BUF = 4096
const FLUSH_LINES = 512
/** Bytes queued for a slow stdout reader beyond which new lines are dropped. */
const MAX_BACKLOG_BYTES = 16 * 1024 * 1024

const RANK: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, none: 100 }

export interface LogSink {
  write(text: string): void
  /** Bytes written but not yet taken by the reader (a Node stream's queue). */
  readonly writableLength?: number
  /** Called once the queue has been taken (a Node stream's `drain`). */
  once?(event: "drain", listener: () => void): unknown
}

/** How lines are written: JSON, or for people (`colour`: with ANSI colours). */
export type LogFormat = "json" | { readonly pretty: { readonly colour: boolean } }

/**
 * The format `[telemetry] log_format` asks for on this output: `auto` is
 * pretty on a terminal (coloured unless `NO_COLOR` is set), JSON otherwise.
 */
export const logFormatFor = (setting: "auto" | "json" | "pretty", output: { readonly isTTY?: boolean | undefined }, env: Readonly<Record<string, string | undefined>>): LogFormat => {
  const terminal = output.isTTY === true
  if (setting === "json" || (setting === "auto" && !terminal)) return "json"
  return { pretty: { colour: terminal && (env.NO_COLOR === undefined || env.NO_COLOR === "") } }
}

export class JsonLog {
  private pending: Array<string> = []
  private scheduled = false
  private readonly threshold: number
  private readonly sink: LogSink
  private readonly flushLines: number

  private readonly worker: string
  private readonly workerNumber: number | undefined
  private readonly pretty: { readonly colour: boolean } | undefined
  private dropped = 0

  /**
   * `flushLines: 1` writes every line at once (tests read lines back in order).
   * `worker`: this process's worker number in workers mode; every line carries
   * it, and each write stays within `PIPE_BUF`, so lines of processes sharing
   * one stdout never interleave.
   */
  constructor(
    level: LogLevel,
    sink: LogSink = process.stdout,
    options: { readonly flushLines?: number; readonly worker?: number | undefined; readonly format?: LogFormat } = {}
  ) {
    this.threshold = RANK[level]
    this.sink = sink
    this.flushLines = options.flushLines ?? FLUSH_LINES
    this.worker = options.worker === undefined ? "" : `,"worker":${options.worker}`
    this.workerNumber = options.worker
    this.pretty = options.format === undefined || options.format === "json" ? undefined : options.format.pretty
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] >= this.threshold
  }

  /** Appends one record; `fields` must be JSON-serializable and secret-free. */
  log(level: LogLevel, msg: string, fields?: object): void {
    if (RANK[level] < this.threshold) return
    if (this.pretty !== undefined) {
      this.pending.push(prettyLine(this.now(), level, this.workerNumber, msg, fields as Record<string, unknown> | undefined, this.pretty.colour))
    } else {
      // Built as text: one stringify of the fields, no merged copy of them.
      const head = this.head(level, msg)
      const rest = fields === undefined ? "{}" : JSON.stringify(fields)
      this.pending.push(rest === "{}" ? `${head}}` : `${head},${rest.slice(1)}`)
    }
    if (this.pending.length >= this.flushLines) this.flush()
    else this.schedule()
  }

  /** A line up to its message: time, level, worker, msg (the caller adds fields and the closing brace). */
  private head(level: LogLevel, msg: string): string {
    return `{"time":"${this.now()}","level":"${level}"${this.worker},"msg":${JSON.stringify(msg)}`
  }

  /** Flushes at the end of this turn of the event loop, once however many lines come. */
  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(this.flush).unref()
  }

  private lastMillis = 0
  private lastIso = ""
  private lastSecond = -1
  /** `2026-11-27T20:43:47.`: the ISO time up to its milliseconds, of `lastSecond`. */
  private secondPrefix = ""

  /**
   * ISO time. `Date#toISOString` cost about 1 % of a request's CPU at full load (a
   * new millisecond nearly every request): it runs once a second, and each
   * millisecond appends its three digits.
   */
  private now(): string {
    const millis = Date.now()
    if (millis !== this.lastMillis) {
      this.lastMillis = millis
      const ms = millis % 1000
      const second = millis - ms
      if (second !== this.lastSecond) {
        this.lastSecond = second
        this.secondPrefix = new Date(second).toISOString().slice(0, 20)
      }
      this.lastIso = `${this.secondPrefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`
    }
    return this.lastIso
  }

  private droppedLine(): string {
    const reason = `stdout reader behind by over ${MAX_BACKLOG_BYTES} bytes`
    const line = this.pretty !== undefined
      ? prettyLine(this.now(), "warn", this.workerNumber, "log lines dropped", { dropped: this.dropped, reason }, this.pretty.colour)
      : `${this.head("warn", "log lines dropped")},"dropped":${this.dropped},"reason":"${reason}"}`
    this.dropped = 0
    return line
  }

  /** The reader caught up: say what was lost even if nothing else is logged. */
  private readonly reportDropped = (): void => {
    if (this.dropped === 0) return
    this.pending.push(this.droppedLine())
    this.schedule()
  }

  readonly flush = (): void => {
    this.scheduled = false
    if (this.pending.length === 0) return
    const lines = this.pending
    this.pending = []
    if ((this.sink.writableLength ?? 0) > MAX_BACKLOG_BYTES) {
      if (this.dropped === 0) this.sink.once?.("drain", this.reportDropped)
      this.dropped += lines.length
      return
    }
    if (this.dropped > 0) lines.push(this.droppedLine())
    if (this.worker === "") {
      this.sink.write(lines.join("\n") + "\n")
      return
    }
    // Several processes share stdout: writes of at most PIPE_BUF bytes are atomic on a pipe.
    let batch = ""
    let bytes = 0
    for (const line of lines) {
      const size = Buffer.byteLength(line) + 1
      if (batch !== "" && bytes + size > PIPE_BUF) {
        this.sink.write(batch)
        batch = ""
        bytes = 0
      }
      batch += `${line}\n`
      bytes += size
    }
    this.sink.write(batch)
  }
}


/** The process-wide log as a service, so tests can capture lines instead of printing them. */
export class Log extends Context.Service<Log, JsonLog>()("gateway/pipeline/telemetry/Log") {
  static readonly layer = (level: LogLevel): Layer.Layer<Log> => Layer.succeed(Log, new JsonLog(level))

  /** A log that collects every record (at every level) in `lines`, in order. */
  static readonly capturing = (lines: Array<Record<string, unknown>>): JsonLog =>
    new JsonLog("trace", {
      write: (text) => {
        for (const line of text.split("\n")) if (line !== "") lines.push(JSON.parse(line))
      }
    }, { flushLines: 1 })

  /** Collects records in memory; read them back with `lines`. */
  static readonly layerTest = (lines: Array<Record<string, unknown>>): Layer.Layer<Log> => Layer.succeed(Log, Log.capturing(lines))
}
