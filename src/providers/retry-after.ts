/**
 * How long an upstream asks to be left alone (`Retry-After`, `retry-after-ms`).
 *
 * `retry-after-ms` (OpenAI, Azure) is milliseconds and wins when present.
 * `Retry-After` is integer or fractional seconds, or an HTTP date. A value that
 * cannot be read, is negative, or is a date already past means nothing was
 * asked: undefined, never a synthesized 0. The result is what the upstream
 * said; routing caps the wait it honours, and the caller is told the same.
 */
import type { IncomingHttpHeaders } from "node:http"

const SECONDS = /^\d+(?:\.\d+)?$/

/** The longest wait taken from an upstream at face value (a day): anything beyond is not a real hint. */
const MAX_MS = 86_400_000

const first = (value: string | Array<string> | undefined): string | undefined => (Array.isArray(value) ? value[0] : value)

const sane = (ms: number): number | undefined => (Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_MS) : undefined)

export const parseRetryAfterMs = (headers: IncomingHttpHeaders, now: number = Date.now()): number | undefined => {
  const millis = first(headers["retry-after-ms"])?.trim()
  if (millis !== undefined && SECONDS.test(millis)) return sane(Number(millis))
  const value = first(headers["retry-after"])?.trim()
  if (value === undefined || value === "") return undefined
  if (SECONDS.test(value)) return sane(Number(value) * 1000)
  // An HTTP date has letters (a weekday or month name); anything else is not one.
  if (!/[a-z]/i.test(value)) return undefined
  const date = Date.parse(value)
  if (Number.isNaN(date) || date <= now) return undefined
  return sane(date - now)
}
