/**
 * Export failures are rate-limited per source: each source (application
 * traces, GenAI spans, GenAI metrics) gets its own line at most every 10 s
 * with its own count of what it held back, never folded into another's.
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import { ExportErrorLog } from "../../../src/pipeline/telemetry/export-errors.ts"
import { Log } from "../../../src/infra/log.ts"

afterEach(() => void vi.useRealTimers())

describe("telemetry export failures", () => {
  it("are logged once per 10 s per source, each source named with its own count of held-back failures", () => {
    vi.useFakeTimers({ toFake: ["performance"] })
    const logs: Array<Record<string, unknown>> = []
    const errors = new ExportErrorLog(Log.capturing(logs))
    const down = new Error("UNAVAILABLE: No connection established")
    errors.report("traces", down)
    errors.report("traces", down)
    errors.report("genai spans", down)
    errors.report("genai metrics", down)
    errors.report("traces", down)
    errors.report("genai metrics", down)
    vi.advanceTimersByTime(10_000)
    errors.report("genai metrics", down)
    errors.report("traces", down)
    expect(logs.map(({ msg, source, suppressed }) => ({ msg, source, suppressed }))).toEqual([
      { msg: "telemetry export failed", source: "traces", suppressed: 0 },
      { msg: "telemetry export failed", source: "genai spans", suppressed: 0 },
      { msg: "telemetry export failed", source: "genai metrics", suppressed: 0 },
      { msg: "telemetry export failed", source: "genai metrics", suppressed: 1 },
      { msg: "telemetry export failed", source: "traces", suppressed: 2 }
    ])
  })
})
