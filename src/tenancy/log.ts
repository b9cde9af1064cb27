/**
 * Rate-limited logging for conditions that repeat per request or per sweep
 * (Redis down, a snapshot that will not open): the first occurrence of a key
 * is logged, then at most one line per window, counting what was held back.
 */
import type { TenantLog } from "./contracts.ts"

const WINDOW_MS = 60_000
const MAX_KEYS = 10_000

export class RateLimitedLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>()
  private readonly log: TenantLog
  private readonly windowMs: number

  constructor(log: TenantLog, windowMs = WINDOW_MS) {
    this.log = log
    this.windowMs = windowMs
  }

  /** Logs `msg` unless `key` was logged within the window. */
  emit(key: string, level: "info" | "warn" | "error", msg: string, fields: object = {}): void {
    const now = Date.now()
    const seen = this.last.get(key)
    if (seen !== undefined && now - seen.at < this.windowMs) {
      seen.suppressed++
      return
    }
    // Bounded: a flood of distinct keys (projects) forgets the oldest windows.
    if (seen === undefined && this.last.size >= MAX_KEYS) this.last.clear()
    this.last.set(key, { at: now, suppressed: 0 })
    this.log.log(level, msg, seen === undefined || seen.suppressed === 0 ? fields : { ...fields, suppressed: seen.suppressed })
  }
}
