/**
 * Span times as OTLP writes them (epoch nanoseconds), from `performance.now()`
 * instants: what the GenAI record's timing holds, and what a sampled span of
 * the application trace reads as it starts and ends.
 */

/** Fixed for the process: read once (a property read through the `performance` object otherwise). */
const TIME_ORIGIN = performance.timeOrigin

/** Epoch nanoseconds of a `performance.now()` instant, to the microsecond (epoch microseconds are below 2^53: exact as a number, one conversion). */
export const epochNanos = (performanceMs: number): bigint => BigInt(Math.round((TIME_ORIGIN + performanceMs) * 1000)) * 1000n

/** Now, as epoch nanoseconds (to the microsecond). */
export const nowNanos = (): bigint => epochNanos(performance.now())
