/**
 * What a batch job tells its operator while it runs: on a terminal, one bar
 * redrawn in place (done / total, rate, failures, ETA); otherwise a plain line
 * every few seconds. Notes (bad input lines) go out as their own lines.
 */

export interface ProgressCounts {
  readonly done: number
  readonly failed: number
  readonly skipped: number
}

const WIDTH = 28

const duration = (seconds: number): string => {
  if (!Number.isFinite(seconds)) return "?"
  const s = Math.round(seconds)
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`
}

export class Progress {
  private readonly started = performance.now()
  private timer: ReturnType<typeof setInterval> | undefined
  private drawn = false
  private readonly total: number
  private readonly out: { write(text: string): unknown }
  private readonly tty: boolean
  private readonly counts: () => ProgressCounts

  constructor(total: number, counts: () => ProgressCounts, out: { write(text: string): unknown; isTTY?: boolean }, plainEveryMs = 5000) {
    this.total = total
    this.counts = counts
    this.out = out
    this.tty = out.isTTY === true
    this.timer = setInterval(() => this.draw(), this.tty ? 200 : plainEveryMs)
    this.timer.unref()
  }

  /** The status text: `1,234/10,000 (12%)  310/s  2 failed  ETA 28s`. */
  status(): string {
    const { done, failed, skipped } = this.counts()
    const elapsed = (performance.now() - this.started) / 1000
    const rate = elapsed > 0 ? done / elapsed : 0
    const remaining = Math.max(0, this.total - done - skipped)
    const finished = done + skipped
    const percent = this.total > 0 ? Math.floor((finished / this.total) * 100) : 100
    const parts = [`${finished.toLocaleString("en-US")}/${this.total.toLocaleString("en-US")} (${percent}%)`, `${rate.toFixed(rate < 10 ? 1 : 0)}/s`, `${failed} failed`]
    if (skipped > 0) parts.push(`${skipped} already done`)
    parts.push(`ETA ${rate > 0 ? duration(remaining / rate) : "?"}`)
    return parts.join("  ")
  }

  private draw(): void {
    if (!this.tty) {
      this.out.write(`batch: ${this.status()}\n`)
      return
    }
    const { done, skipped } = this.counts()
    const filled = this.total > 0 ? Math.min(WIDTH, Math.round(((done + skipped) / this.total) * WIDTH)) : WIDTH
    this.out.write(`\r\x1b[2K[${"#".repeat(filled)}${".".repeat(WIDTH - filled)}] ${this.status()}`)
    this.drawn = true
  }

  /** A line of its own (a bad input line, a note), above the bar. */
  note(text: string): void {
    if (this.tty && this.drawn) this.out.write("\r\x1b[2K")
    this.out.write(`${text}\n`)
    if (this.tty && this.drawn) this.draw()
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    if (this.tty) {
      this.draw()
      this.out.write("\n")
    }
  }
}
