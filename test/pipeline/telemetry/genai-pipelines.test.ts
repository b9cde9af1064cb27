/**
 * One GenAI export pipeline per credential, bounded: the least recently used
 * is closed (after flushing) past the limit, idle ones and those whose token
 * is about to expire are closed by the sweep, and nothing recorded is lost.
 */
import { Redacted } from "effect"
import { describe, expect, it } from "vitest"
import type { GenAiCall } from "../../../src/pipeline/telemetry/genai/call.ts"
import { GenAiRecorder, IDLE_MS, MAX_PIPELINES } from "../../../src/pipeline/telemetry/genai/recorder.ts"
import { TelemetryMemory } from "../../../src/pipeline/telemetry/memory.ts"
import type { ExportCredential } from "../../../src/pipeline/telemetry/settings.ts"
import { settingsOf } from "./support.ts"

const call: GenAiCall = {
  operation: "chat",
  requestedModel: "gpt-4o",
  upstream: { providerId: "openai", kind: "openai", origin: "https://api.openai.test", model: "gpt-4o" },
  stream: false,
  response: { model: "gpt-4o", stopReason: "end_turn", usage: { inputTokens: 1, outputTokens: 2 } },
  timing: { startedAt: 0, endedAt: 10 }
}

const credential = (n: number, expiresAt?: number): ExportCredential => ({ token: Redacted.make(`token-${n}`), fingerprint: `fp-${n}`, expiresAt })

const recorder = (memory: TelemetryMemory, errors: Array<unknown> = []) =>
  new GenAiRecorder(settingsOf({ genai_telemetry: { enabled: true } }), memory, {}, (_source, error) => errors.push(error))

describe("GenAI pipelines", () => {
  it(`at most ${MAX_PIPELINES} are open; the least recently used is closed for a new one, its spans kept`, async () => {
    const memory = new TelemetryMemory()
    const genai = recorder(memory)
    for (let n = 0; n < MAX_PIPELINES + 5; n++) genai.record(call, undefined, credential(n))
    expect(genai.size).toBe(MAX_PIPELINES)
    await genai.shutdown()
    const spans = memory.genAiSpans()
    expect(spans).toHaveLength(MAX_PIPELINES + 5)
    expect(new Set(spans.map((span) => span.credential)).size).toBe(MAX_PIPELINES + 5)
  })

  it("using a pipeline makes it the most recent: it survives the next eviction", () => {
    const memory = new TelemetryMemory()
    const genai = recorder(memory)
    for (let n = 0; n < MAX_PIPELINES; n++) genai.record(call, undefined, credential(n))
    genai.record(call, undefined, credential(0))
    genai.record(call, undefined, credential(MAX_PIPELINES))
    // Pipeline 1 was the least recently used and is gone; 0 is still open (no new pipeline for it).
    const before = memory.genAiSpans().length
    genai.record(call, undefined, credential(0))
    expect(memory.genAiSpans().filter((span) => span.credential === "fp-0")).toHaveLength(3)
    expect(memory.genAiSpans().length).toBe(before + 1)
    void genai.shutdown()
  })

  it("the sweep closes idle pipelines and those whose token is about to expire", async () => {
    const memory = new TelemetryMemory()
    const genai = recorder(memory)
    const now = Date.now()
    genai.record(call, undefined, credential(1))
    genai.record(call, undefined, credential(2, now + 60_000))
    genai.record(call, undefined, undefined)
    genai.sweep(now + 58_000)
    expect(genai.size).toBe(2)
    genai.sweep(Date.now() + IDLE_MS + 1)
    expect(genai.size).toBe(0)
    // A credential seen again after its pipeline closed gets a new one.
    genai.record(call, undefined, credential(1))
    expect(genai.size).toBe(1)
    await genai.shutdown()
    expect(memory.genAiSpans().map((span) => span.credential).sort()).toEqual(["fp-1", "fp-1", "fp-2", "static"])
  })

  it("a call that cannot be recorded is reported, never thrown into the request", () => {
    const errors: Array<unknown> = []
    const genai = recorder(new TelemetryMemory(), errors)
    expect(() => genai.record({ ...call, upstream: undefined as never }, undefined, undefined)).not.toThrow()
    expect(errors).toHaveLength(1)
    void genai.shutdown()
  })
})

describe("GenAI metrics of a failed call", () => {
  it("the duration carries error.type; token usage does not", async () => {
    const memory = new TelemetryMemory()
    const genai = recorder(memory)
    genai.record({ ...call, error: "overloaded" }, undefined, undefined)
    const histograms = await memory.histograms()
    await genai.shutdown()
    const duration = histograms.find((point) => point.name === "gen_ai.client.operation.duration")!
    expect(duration.attributes["error.type"]).toBe("overloaded")
    const tokens = histograms.filter((point) => point.name === "gen_ai.client.token.usage")
    expect(tokens).toHaveLength(2)
    for (const point of tokens) expect(point.attributes["error.type"]).toBeUndefined()
  })
})
