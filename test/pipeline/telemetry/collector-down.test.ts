/**
 * A collector that is down or refusing costs requests nothing: recording
 * returns at once, exports fail in the background, and the failures make one
 * log line per 10 seconds and source, never one per request, and nothing on
 * the console.
 */
import * as grpc from "@grpc/grpc-js"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { ProtoWriter } from "../../../src/otlp/protobuf.ts"
import { closedPort, startOtlpReceiver } from "../../fixtures/otlp-receiver.ts"
import { requestProgram, settingsOf, startTelemetry } from "./support.ts"
import type { GenAiCall } from "../../../src/pipeline/telemetry/genai/call.ts"

const call: GenAiCall = {
  operation: "chat",
  requestedModel: "gpt-4o",
  upstream: { providerId: "openai", kind: "openai", origin: "http://127.0.0.1:1", model: "gpt-4o" },
  stream: false,
  response: { model: "gpt-4o", stopReason: "end_turn", usage: { inputTokens: 3, outputTokens: 4 }, text: "hi" },
  timing: { startedAt: 0, endedAt: 5 }
}

const consoleCalls: Array<unknown> = []
beforeEach(() => {
  consoleCalls.length = 0
  for (const method of ["error", "warn", "log", "info"] as const) vi.spyOn(console, method).mockImplementation((...args) => void consoleCalls.push(args))
})
afterEach(() => vi.restoreAllMocks())

const exportFailures = (logs: ReadonlyArray<Record<string, unknown>>) => logs.filter((line) => line.msg === "telemetry export failed")

describe("a collector that is down", () => {
  it("requests complete, the failures are logged once per source, nothing reaches the console", async () => {
    const port = await closedPort()
    const endpoint = `http://127.0.0.1:${port}`
    const running = await startTelemetry(settingsOf({
      telemetry: { otlp_endpoint: endpoint, sample_ratio: 1 },
      genai_telemetry: { enabled: true, otlp_endpoint: endpoint, otlp_bearer_token: "collector-secret" }
    }))
    for (let i = 0; i < 50; i++) {
      await running.run(requestProgram(running.telemetry))
      await running.run(running.telemetry.recordModelCall(call))
    }
    // Each flush makes three failed exports (application spans, GenAI spans, GenAI metrics).
    await running.run(running.telemetry.flush)
    await running.run(running.telemetry.flush)
    await running.close()
    const failures = exportFailures(running.logs)
    expect(failures.map((line) => line.source).sort()).toEqual(["genai metrics", "genai spans", "traces"])
    for (const failure of failures) {
      expect(failure).toMatchObject({ level: "warn" })
      expect(String(failure.error)).toMatch(/UNAVAILABLE|ECONNREFUSED|connect/i)
    }
    expect(JSON.stringify(running.logs)).not.toContain("collector-secret")
    expect(consoleCalls).toEqual([])
  })
})

describe("at start-up", () => {
  const startupLines = (logs: ReadonlyArray<Record<string, unknown>>) => logs.filter((line) => String(line.msg).startsWith("telemetry collector"))

  it("a collector nothing answers at is named once, with what is on, where it sends and how to point it elsewhere or turn it off", async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`
    const running = await startTelemetry(settingsOf({
      telemetry: { otlp_endpoint: endpoint },
      genai_telemetry: { enabled: true, otlp_endpoint: endpoint, otlp_bearer_token: "collector-secret" }
    }))
    try {
      await vi.waitFor(() => expect(startupLines(running.logs)).toHaveLength(1), { timeout: 8000, interval: 20 })
      const [line] = startupLines(running.logs)
      expect(line).toMatchObject({ level: "warn", msg: "telemetry collector unreachable", endpoint, sends: ["traces", "genai spans", "genai metrics"] })
      expect(line.hint).toContain("OTEL_EXPORTER_OTLP_ENDPOINT")
      expect(line.hint).toContain("GATEWAY_TELEMETRY_ENABLED=false")
      expect(line.hint).toContain("GATEWAY_GENAI_TELEMETRY_ENABLED=false")
    } finally {
      await running.close()
    }
    expect(startupLines(running.logs)).toHaveLength(1)
    expect(JSON.stringify(running.logs)).not.toContain("collector-secret")
  })

  it("a collector that answers gets no warning", async () => {
    const collector = await startOtlpReceiver()
    try {
      const running = await startTelemetry(settingsOf({ telemetry: { otlp_endpoint: collector.url } }))
      await vi.waitFor(() => expect(startupLines(running.logs)).toHaveLength(1), { timeout: 8000, interval: 20 })
      await running.close()
      expect(startupLines(running.logs)).toEqual([expect.objectContaining({ level: "debug", msg: "telemetry collector answers" })])
    } finally {
      await collector.close()
    }
  })
})

describe("a collector that refuses", () => {
  it("refused exports are logged once with the count held back, and exporting resumes when it accepts again", async () => {
    const collector = await startOtlpReceiver()
    try {
      collector.refuse(grpc.status.RESOURCE_EXHAUSTED)
      const running = await startTelemetry(settingsOf({ genai_telemetry: { enabled: true, otlp_endpoint: collector.url, metrics_enabled: false }, telemetry: { enabled: false } }))
      for (let round = 0; round < 3; round++) {
        await running.run(running.telemetry.recordModelCall(call))
        await running.run(running.telemetry.flush)
      }
      expect(exportFailures(running.logs)).toHaveLength(1)
      expect(collector.calls).toEqual([])
      collector.refuse(grpc.status.OK)
      await running.run(running.telemetry.recordModelCall(call))
      await running.run(running.telemetry.flush)
      await running.close()
      await collector.waitFor((c) => c.spans().length >= 1)
      expect(consoleCalls).toEqual([])
    } finally {
      await collector.close()
    }
  })
})

describe("a collector that takes part of an export", () => {
  it("its partial_success is reported with the count and message, and the export is not sent again", async () => {
    const collector = await startOtlpReceiver()
    try {
      const w = new ProtoWriter(64)
      const partial = w.begin(1)
      w.uintField(1, 3)
      w.stringField(2, "3 spans too old")
      w.end(partial)
      collector.answerWith(w.bytes())
      const running = await startTelemetry(settingsOf({ genai_telemetry: { enabled: true, otlp_endpoint: collector.url, metrics_enabled: false }, telemetry: { enabled: false } }))
      await running.run(running.telemetry.recordModelCall(call))
      await running.run(running.telemetry.flush)
      await running.close()
      const [failure, ...more] = exportFailures(running.logs)
      expect(more).toEqual([])
      expect(failure.error).toBe("the collector rejected 3 item(s): 3 spans too old")
      expect(collector.calls.filter((c) => c.signal === "traces")).toHaveLength(1)
    } finally {
      await collector.close()
    }
  })
})

