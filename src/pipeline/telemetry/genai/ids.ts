/**
 * Trace and span ids of GenAI spans, and the trace-id ratio sampler of
 * `[genai_telemetry] sample_ratio`.
 */
import * as Hex from "effect/encoding/Hex"

export const randomTraceId = (): string => Hex.random(32)
export const randomSpanId = (): string => Hex.random(16)

/**
 * Whether a trace is sampled at `ratio`, decided by its id alone (the same
 * trace gets the same answer in every process): its last 8 hex digits as a
 * fraction of 2^32, below the ratio.
 */
export const sampledTrace = (traceId: string, ratio: number): boolean => {
  if (ratio >= 1) return true
  if (ratio <= 0) return false
  return parseInt(traceId.slice(-8), 16) / 0x100000000 < ratio
}
