/**
 * The gateway's own OTLP encoding, read back with the decoder pinned to the
 * OpenTelemetry SDK's bytes (decoder.test.ts): every attribute type,
 * lengths that need more than one byte, text in any script; and the export
 * queue's batching, bounds and failure reports.
 */
import { describe, expect, it } from "vitest"
import { exportRequest, requestHead, writeAttribute } from "../../src/otlp/common.ts"
import { GenAiMetrics } from "../../src/pipeline/telemetry/genai/metrics.ts"
import { decodeMetricsRequest, decodeTraceRequest } from "../../src/otlp/decode.ts"
import { HistogramInstrument } from "../../src/otlp/metrics.ts"
import { ProtoWriter } from "../../src/otlp/protobuf.ts"
import { ByteBudget, ExportQueue } from "../../src/otlp/queue.ts"
import type { QueueOptions } from "../../src/otlp/queue.ts"
import { beginSpan, endSpan, SPAN_ATTRIBUTES, SPAN_KIND, STATUS_CODE } from "../../src/otlp/trace.ts"

const head = requestHead({ "service.name": "gateway-test", "deployment.environment.name": "ci" }, "scope-test")

const writeOneSpan = (w: ProtoWriter, name: string, attributes: Record<string, unknown>, status: { code: number; message: string } = { code: STATUS_CODE.unset, message: "" }) => {
  const start = beginSpan(w, {
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: "00f067aa0ba902b7",
    parentSpanId: "b7ad6b7169203331",
    remoteParent: true,
    traceState: "vendor=abc",
    name,
    kind: SPAN_KIND.client,
    startNs: 1_790_000_000_123_456_789n,
    endNs: 1_790_000_000_987_654_321n
  })
  for (const key in attributes) writeAttribute(w, SPAN_ATTRIBUTES, key, attributes[key])
  endSpan(w, start, status.code, status.message, true)
}

describe("OTLP encoding", () => {
  it("a span with every attribute type reads back as written", () => {
    const attributes = {
      ascii: "gpt-4o",
      accents: "réponse ✓",
      astral: "𝄞 music",
      empty: "",
      long: "x".repeat(300),
      longUnicode: "é".repeat(200),
      zero: 0,
      count: 4317,
      big: 2 ** 52,
      negative: -42,
      fraction: 0.25,
      yes: true,
      no: false,
      list: ["stop", "length"],
      record: { nested: [1, 2] }
    }
    const w = new ProtoWriter(64)
    writeOneSpan(w, "chat gpt-4o", attributes, { code: STATUS_CODE.error, message: "rate_limit" })
    const [span, ...rest] = decodeTraceRequest(exportRequest(head, w.buf.subarray(0, w.pos)))
    expect(rest).toEqual([])
    expect(span).toMatchObject({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      parentSpanId: "b7ad6b7169203331",
      traceState: "vendor=abc",
      name: "chat gpt-4o",
      kind: 3,
      startNs: 1_790_000_000_123_456_789n,
      endNs: 1_790_000_000_987_654_321n,
      status: { code: 2, message: "rate_limit" },
      resource: { "service.name": "gateway-test", "deployment.environment.name": "ci" },
      scope: "scope-test"
    })
    expect(span.attributes).toEqual({ ...attributes, record: JSON.stringify(attributes.record) })
  })

  it("spans over 128 bytes and a batch over 16 KB keep their lengths (nested lengths of two and three bytes)", () => {
    const w = new ProtoWriter(16)
    const names = Array.from({ length: 200 }, (_, i) => `span-${i}-${"n".repeat(i)}`)
    for (const name of names) writeOneSpan(w, name, { index: names.indexOf(name), text: "t".repeat(names.indexOf(name) * 3) })
    const spans = decodeTraceRequest(exportRequest(head, w.buf.subarray(0, w.pos)))
    expect(spans.map((span) => span.name)).toEqual(names)
    expect(spans.map((span) => span.attributes.index)).toEqual(names.map((_, i) => i))
    expect(spans[199].attributes.text).toBe("t".repeat(597))
  })
})

describe("OTLP metrics", () => {
  it("an instrument none of whose series recorded a value writes no metric (no Metric without data points)", () => {
    const instrument = new HistogramInstrument({ name: "gen_ai.server.time_to_first_token", unit: "s", description: "", boundaries: [0.1, 1] })
    instrument.newSeries({ "gen_ai.operation.name": "chat" })
    const w = new ProtoWriter(64)
    instrument.write(w, 1n, 2n)
    expect(w.pos).toBe(0)
  })

  it("the metrics of non-streamed calls carry no time-to-first-token metric", () => {
    const metrics = new GenAiMetrics()
    metrics.record({
      operation: "chat",
      requestedModel: "gpt-4o",
      upstream: { providerId: "openai", kind: "openai", origin: "https://api.openai.test", model: "gpt-4o" },
      stream: false,
      response: { model: "gpt-4o", usage: { inputTokens: 3, outputTokens: 5 } },
      timing: { startedAt: 0, endedAt: 1500 }
    })
    const w = new ProtoWriter(64)
    metrics.write(w, 1n, 2n)
    const request = exportRequest(head, w.buf.subarray(0, w.pos))
    expect(new Set(decodeMetricsRequest(request).map((point) => point.metric))).toEqual(new Set(["gen_ai.client.token.usage", "gen_ai.client.operation.duration"]))
    expect(request.includes("gen_ai.server.time_to_first_token")).toBe(false)
  })
})

/** A queue whose exports are decoded into `sent` (span names per request) and whose failures go to `failures`. */
const queue = (overrides: Partial<QueueOptions> = {}) => {
  const sent: Array<ReadonlyArray<string>> = []
  const failures: Array<string> = []
  const q = new ExportQueue({
    head,
    send: (request) => {
      sent.push(decodeTraceRequest(request).map((span) => span.name))
      return Promise.resolve()
    },
    maxQueued: 100,
    maxQueuedBytes: 1 << 20,
    maxBatch: 10,
    maxBatchBytes: 1 << 20,
    delayMs: 60_000,
    onFailure: (error) => failures.push(String(error)),
    ...overrides
  })
  const write = (name: string, attributes: Record<string, unknown> = {}) => {
    const w = q.open()
    if (w === undefined) return false
    writeOneSpan(w, name, attributes)
    q.commit()
    return true
  }
  return { q, sent, failures, write }
}

describe("the export queue", () => {

  it("sends full batches at once and the rest on flush, one request at a time, in order", async () => {
    const { q, sent, write } = queue()
    for (let i = 0; i < 25; i++) write(`s${i}`)
    await q.flush()
    expect(sent.map((batch) => batch.length)).toEqual([10, 10, 5])
    expect(sent.flat()).toEqual(Array.from({ length: 25 }, (_, i) => `s${i}`))
  })

  it("seals a batch by size too, so no request outgrows what a collector takes", async () => {
    const { q, sent, write } = queue({ maxBatchBytes: 500 })
    for (let i = 0; i < 12; i++) write(`size-${i}`)
    await q.flush()
    expect(sent.length).toBeGreaterThan(1)
    expect(sent.flat()).toHaveLength(12)
  })

  it("a collector that does not take exports: the queue fills, drops what is over its bound, reports, and recovers", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let calls = 0
    const { q, failures, write } = queue({
      maxQueued: 30,
      send: () => (++calls === 1 ? held.then(() => Promise.reject(new Error("UNAVAILABLE: collector down"))) : Promise.resolve())
    })
    const accepted = Array.from({ length: 50 }, (_, i) => write(`d${i}`)).filter(Boolean).length
    expect(accepted).toBe(30)
    expect(failures.filter((failure) => failure.includes("queue is full"))).toHaveLength(20)
    release()
    await q.flush()
    expect(failures.some((failure) => failure.includes("UNAVAILABLE: collector down"))).toBe(true)
    // The first batch failed and was dropped; the queue has room again.
    expect(write("after")).toBe(true)
    await q.close()
    expect(write("closed")).toBe(false)
  })
})

describe("the export queue's bounds and failures", () => {
  it("queues sharing a byte budget hold no more than it together, and free it as their batches leave", async () => {
    const budget = new ByteBudget(2000)
    const queues = [0, 1, 2].map(() => queue({ budget, maxQueued: 1000, maxBatch: 1000 }))
    let accepted = 0
    for (let i = 0; i < 60; i++) if (queues[i % 3].write(`b${i}`, { filler: "f".repeat(50) })) accepted++
    expect(accepted).toBeLessThan(60)
    expect(budget.used).toBeGreaterThanOrEqual(2000)
    expect(budget.used).toBeLessThan(2000 + 400)
    await Promise.all(queues.map(({ q }) => q.flush()))
    expect(queues.flatMap(({ sent }) => sent.flat())).toHaveLength(accepted)
    expect(budget.used).toBe(0)
  })

  it("a queue whose batch grew its buffer past 1 MiB does not keep that buffer once the batch is sealed (the byte budget does not count it)", async () => {
    // 128 GenAI queues each keeping the 4 MiB a 3 MiB batch grew their writer to would hold 512 MiB with the budget at 0.
    const { q, write } = queue({ maxQueued: 2048, maxQueuedBytes: 16 << 20, maxBatch: 512, maxBatchBytes: 3 << 20 })
    for (let i = 0; i < 40; i++) write(`big-${i}`, { content: "c".repeat(100_000) })
    await q.flush()
    const writer = (q as unknown as { readonly writer: ProtoWriter }).writer
    expect(writer.buf.length).toBeLessThanOrEqual(1 << 20)
  })

  it("an item whose writing failed half-way is left out; the batch stays well-formed", async () => {
    const { q, sent } = queue({ maxBatch: 100 })
    writeOneSpan(q.open()!, "first", {})
    q.commit()
    const w = q.open()!
    w.begin(2)
    w.stringField(1, "half a span, never committed")
    writeOneSpan(q.open()!, "second", {})
    q.commit()
    await q.flush()
    expect(sent).toEqual([["first", "second"]])
  })
})

describe("retries", () => {
  /** A failure the collector says may pass (otlp/grpc.ts marks OTLP's retryable gRPC codes so). */
  const passing = () => Object.assign(new Error("UNAVAILABLE: collector restarting"), { retryable: true })
  const settled = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  it("a batch the collector could not take for a passing reason is sent again, in order, before what came after it", async () => {
    let calls = 0
    const delivered: Array<ReadonlyArray<string>> = []
    const { write, failures } = queue({
      maxBatch: 2,
      retryDelaysMs: [5, 5, 5],
      send: (request) => {
        if (++calls <= 2) return Promise.reject(passing())
        delivered.push(decodeTraceRequest(request).map((span) => span.name))
        return Promise.resolve()
      }
    })
    for (const name of ["a", "b", "c", "d"]) write(name)
    await settled(100)
    expect(delivered).toEqual([["a", "b"], ["c", "d"]])
    expect(failures).toHaveLength(2)
  })

  it("gives up after the last retry, and a failure that will not pass is not retried at all", async () => {
    let calls = 0
    const { q, write } = queue({ maxBatch: 1, retryDelaysMs: [5, 5], send: () => (++calls, Promise.reject(passing())) })
    write("kept trying")
    await settled(100)
    expect(calls).toBe(3)
    calls = 0
    const refused = queue({ maxBatch: 1, retryDelaysMs: [5, 5], send: () => (++calls, Promise.reject(new Error("INVALID_ARGUMENT: bad request"))) })
    refused.write("refused")
    await settled(50)
    expect(calls).toBe(1)
    await Promise.all([q.close(), refused.q.close()])
  })

  it("a flush does not wait out a retry: what is left is tried once more, now", async () => {
    let calls = 0
    const { q, write } = queue({ maxBatch: 1, retryDelaysMs: [60_000], send: () => (++calls, Promise.reject(passing())) })
    write("x")
    await settled(10)
    expect(calls).toBe(1)
    await q.flush()
    expect(calls).toBe(2)
  })
})

