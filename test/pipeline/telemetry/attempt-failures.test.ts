/**
 * Upstream failures on the trace: the attempt span says what failed and, for a
 * 5xx the caller did not see (docs/reference/gateway-spec.md §7.3.6), keeps the body's first 4 KB; no
 * other span carries the upstream's text.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { UpstreamError } from "../../../src/domain/index.ts"
import { TelemetryMemory } from "../../../src/pipeline/telemetry/memory.ts"
import { STATUS_CODE } from "../../../src/otlp/trace.ts"
import { ERROR_BODY_LIMIT, inAttemptSpan } from "../../../src/pipeline/telemetry/spans.ts"
import { asRequest, ORIGIN, settingsOf, startTelemetry } from "./support.ts"

const SECRET_TEXT = "database password is hunter2"
const source = { providerId: "openai", family: "openai" as const }

const attempt = (number: number, error: UpstreamError | undefined, retryDelayMs?: number) =>
  inAttemptSpan({ attempt: number, providerId: "openai", kind: "openai", origin: ORIGIN, targetId: "primary", model: "gpt-4o", retryDelayMs }, () =>
    error === undefined ? Effect.void : Effect.fail(error)
  )

/** A request that fails twice with `error`, then succeeds, inside a traced program function and a server span. */
const retriedRequest = (running: Awaited<ReturnType<typeof startTelemetry>>, error: UpstreamError) => {
  const program = Effect.fn("ChatProgram.run")(function*() {
    yield* attempt(1, error).pipe(Effect.ignore)
    yield* attempt(2, error, 250).pipe(Effect.ignore)
    // The last failure escapes the program, as a failed plan does.
    return yield* attempt(3, error, 500)
  })
  return running.run(asRequest(running.telemetry, program().pipe(Effect.catch(() => Effect.void)), {}, 502))
}

describe("attempt spans", () => {
  it("a 5xx body the caller does not see is kept on the attempt span only, cut to 4 KB", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    const body = Buffer.from(JSON.stringify({ error: { message: `${SECRET_TEXT} ${"x".repeat(10_000)}` } }))
    await retriedRequest(running, UpstreamError.fromResponse(source, 500, body))
    const spans = memory.appSpans()
    await running.close()

    const attempts = spans.filter((span) => span.name === "gateway.upstream_attempt")
    expect(attempts.map((span) => span.attributes["gateway.attempt.number"])).toEqual([1, 2, 3])
    for (const span of attempts) {
      const kept = span.attributes["gateway.upstream.error_body"] as string
      expect(kept).toBe(body.subarray(0, ERROR_BODY_LIMIT).toString("utf8"))
      expect(span.attributes).toMatchObject({ "error.type": "upstream", "gateway.upstream.status_code": 500 })
      expect(span.status.code).toBe(STATUS_CODE.error)
    }
    expect(attempts.map((span) => span.attributes["gateway.retry.delay_ms"])).toEqual([undefined, 250, 500])

    // Everything a span carries besides that one attribute: names, attributes, events, status messages.
    const elsewhere = JSON.stringify(spans.map((span) => ({
      name: span.name,
      status: span.status,
      attributes: Object.fromEntries(Object.entries(span.attributes).filter(([key]) => key !== "gateway.upstream.error_body")),
      events: span.events
    })))
    expect(elsewhere).not.toContain(SECRET_TEXT)
    // The failure is still told, in the gateway's words.
    expect(elsewhere).toContain("upstream: provider openai returned status 500")
    expect(spans.some((span) => span.name === "ChatProgram.run" && span.status.code === STATUS_CODE.error)).toBe(true)
  })

  it("a 4xx (whose body the caller gets) is classified but its body is not copied", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    const body = Buffer.from(JSON.stringify({ error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } }))
    await running.run(attempt(1, UpstreamError.fromResponse(source, 429, body)).pipe(Effect.ignore))
    const [span] = memory.appSpans()
    await running.close()
    expect(span.attributes).toMatchObject({ "error.type": "rate_limit", "gateway.upstream.status_code": 429 })
    expect(span.attributes["gateway.upstream.error_body"]).toBeUndefined()
  })

  it("a timeout is classified, with no body", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    await running.run(attempt(1, UpstreamError.fault(source, "no response head within 30000 ms", { timeout: "head" })).pipe(Effect.ignore))
    const [span] = memory.appSpans()
    await running.close()
    expect(span.attributes).toMatchObject({ "error.type": "upstream", "gateway.upstream.status_code": 0 })
    expect(span.attributes["gateway.upstream.error_body"]).toBeUndefined()
    expect(JSON.stringify(span.events)).toContain("upstream: provider openai timed out")
  })
})

describe("a stream that broke after its head", () => {
  it("its attempt span names the failure and is an error span; an attribute set to undefined is left out", async () => {
    const memory = new TelemetryMemory()
    const running = await startTelemetry(settingsOf({ telemetry: { sample_ratio: 1 } }), memory)
    await running.run(asRequest(running.telemetry, inAttemptSpan({ attempt: 1, providerId: "openai", kind: "openai", origin: ORIGIN, targetId: "primary", model: "gpt-4o" }, (span) =>
      Effect.sync(() => {
        // What ModelCallTrace does when the attempt succeeded but its stream broke.
        span.attribute("error.type", "upstream")
        span.attribute("gateway.unset", undefined)
      }))))
    const [attempt] = memory.appSpans().filter((span) => span.name === "gateway.upstream_attempt")
    await running.close()
    expect(attempt.attributes["error.type"]).toBe("upstream")
    expect(attempt.status.code).toBe(STATUS_CODE.error)
    expect("gateway.unset" in attempt.attributes).toBe(false)
  })
})
