/**
 * How the cache tells an operator that its store fails: one `cache
 * unavailable` warning per kind of failure and store URL at most every 10
 * seconds, never one per request, with the count of failures the silence
 * hid since the last line. The URL is shown without its password, and error
 * texts are scrubbed of it too.
 */
import { redisLogTarget } from "../../config/index.ts"
import type { JsonLog } from "../../infra/log.ts"

export type FailureKind =
  /** A connection to the store failed or dropped (ioredis `error`). */
  | "connection"
  /** A lookup got no answer: the store is down, or slower than the lookup budget. */
  | "lookup failed"
  /** The stored value does not open or is not an entry (damaged, foreign, written by another version). */
  | "unreadable entry"
  /** A write failed. */
  | "store failed"
  /** A write was dropped: too many bytes already waiting for a slow store. */
  | "store skipped"

export type ReportFailure = (kind: FailureKind, url: string, reason?: string) => void

export const LOG_EVERY_MS = 10_000

/** `message` names the store in the line (the Responses store reports the same way). */
export const failureReporter = (log: JsonLog, now: () => number = Date.now, message = "cache unavailable"): ReportFailure => {
  const last = new Map<string, { at: number; suppressed: number }>()
  return (kind, url, reason) => {
    const id = `${kind}\n${url}`
    const time = now()
    const seen = last.get(id)
    if (seen !== undefined && time - seen.at < LOG_EVERY_MS) {
      seen.suppressed++
      return
    }
    last.set(id, { at: time, suppressed: 0 })
    const target = redisLogTarget(url)
    log.log("warn", message, {
      kind,
      url: target.shown,
      ...(reason === undefined ? {} : { reason: target.scrub(reason) }),
      ...(seen === undefined || seen.suppressed === 0 ? {} : { suppressed: seen.suppressed })
    })
  }
}

export const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))
