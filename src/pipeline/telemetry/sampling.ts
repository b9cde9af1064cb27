/**
 * Sampling decisions of both sections: whether a request is traced
 * (`sampleRequest`, the application trace's `sample_ratio`), the trace-id
 * ratio sampler of `[genai_telemetry] sample_ratio` (a call in a trace is
 * sampled by the trace's id, so every process decides a trace alike), and the
 * draw for a trace nobody decided yet.
 */
import type { Tracer } from "effect"

/** Whether a trace is sampled at `ratio`: its last 8 hex digits as a fraction of 2^32, below the ratio. */
export const sampledTrace = (traceId: string, ratio: number): boolean => {
  if (ratio >= 1) return true
  if (ratio <= 0) return false
  return parseInt(traceId.slice(-8), 16) / 0x100000000 < ratio
}

/** A draw at `ratio`, for a trace that starts here. */
export const drawn = (ratio: number): boolean => ratio >= 1 || (ratio > 0 && Math.random() < ratio)

/**
 * Whether a request's trace is recorded, decided before its server span
 * starts (so an unsampled request creates no span at all): the caller's
 * sampled flag when it sent a trace context, else a draw at `ratio`.
 */
export const sampleRequest = (parent: Tracer.AnySpan | undefined, ratio: number): boolean =>
  parent !== undefined ? parent.sampled : drawn(ratio)
