/**
 * The limits stage over a test's script runner (`Limits.layerTest`): what a
 * verdict of the store becomes (headers, the 429 and its wait), and the store
 * failing: `allow` admits uncounted and logs once per 10 s with how many
 * requests it concerned, `deny` refuses 503.
 */
import { Effect, Fiber, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { GatewayError, InfraError } from "../../../src/domain/index.ts"
import { Log } from "../../../src/infra/log.ts"
import { Limits, resetText } from "../../../src/pipeline/index.ts"
import type { Admission, LimitSubject, RunScript } from "../../../src/pipeline/index.ts"

const SUBJECT: LimitSubject = { id: "key:team", limits: { requests_per_minute: 10, tokens_per_minute: 1000 } }
const ESTIMATE = { tokens: 50, costUsd: () => 0 }

const answering = (verdict: ReadonlyArray<number>): RunScript => () => Promise.resolve(verdict)
const admitAsync = async (run: RunScript, onStoreError: "allow" | "deny" = "allow", times = 1) => {
  const lines: Array<Record<string, unknown>> = []
  const admissions = await Effect.runPromise(Effect.gen(function*() {
    const limits = yield* Limits
    const all: Array<Admission> = []
    for (let i = 0; i < times; i++) all.push(yield* limits.admit(SUBJECT, ESTIMATE))
    return all
  }).pipe(Effect.provide(Limits.layerTest(run, onStoreError).pipe(Layer.provide(Log.layerTest(lines))))))
  return { admissions, lines }
}

describe("the limits stage", () => {
  it("an admission carries OpenAI's x-ratelimit headers from the store's answer", async () => {
    const { admissions } = await admitAsync(answering([0, 4, 30_500, 250, 1_200]))
    expect(admissions[0]).toMatchObject({
      _tag: "Admitted",
      headers: {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "6",
        "x-ratelimit-reset-requests": "31s",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "750",
        "x-ratelimit-reset-tokens": "2s"
      }
    })
  })

  it("a refusal is a 429 rate_limit whose retry-after is when the window frees a request", async () => {
    const { admissions } = await admitAsync(answering([1, 10, 12_300, 0, 60_000]))
    const refused = admissions[0]
    if (refused._tag !== "Refused") return expect.fail("expected a refusal")
    expect(refused.error).toBeInstanceOf(GatewayError)
    expect([refused.error.status, (refused.error as GatewayError).code, (refused.error as GatewayError).classification]).toEqual([429, "rate_limit", "rate_limit"])
    expect(refused.headers).toMatchObject({ "retry-after": "13", "retry-after-ms": "12300", "x-ratelimit-remaining-requests": "0" })
    expect(refused.error.message).toContain('gateway key "team"')
  })

  it("the store failing: allow admits uncounted and logs once for many requests; deny answers 503", async () => {
    const failing: RunScript = () => Promise.reject(new Error("connect ECONNREFUSED"))
    const allowed = await admitAsync(failing, "allow", 5)
    expect(allowed.admissions.map((admission) => admission._tag)).toEqual(["Admitted", "Admitted", "Admitted", "Admitted", "Admitted"])
    expect(allowed.admissions.every((admission) => admission._tag === "Admitted" && admission.headers === undefined)).toBe(true)
    const warnings = allowed.lines.filter((line) => line.msg === "limits store unavailable")
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ level: "warn", on_store_error: "allow", requests: 1, reason: "connect ECONNREFUSED" })

    const denied = await admitAsync(failing, "deny")
    const refused = denied.admissions[0]
    if (refused._tag !== "Refused") return expect.fail("expected a refusal")
    expect(refused.error).toBeInstanceOf(InfraError)
    expect(refused.error.status).toBe(503)
  })

  it("a request interrupted while the store admits it (its caller left) is taken back at once", async () => {
    const calls: Array<ReadonlyArray<string | number>> = []
    let answer: (verdict: ReadonlyArray<number>) => void = () => {}
    const run: RunScript = (_script, _keys, args) => {
      calls.push(args)
      return calls.length === 1 ? new Promise((resolve) => (answer = resolve)) : Promise.resolve(0)
    }
    await Effect.runPromise(Effect.gen(function*() {
      const limits = yield* Limits
      const fiber = yield* Effect.forkChild(limits.admit(SUBJECT, ESTIMATE))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Limits.layerTest(run).pipe(Layer.provide(Log.layerTest([]))))))
    answer([0, 1, 60_000, 50, 60_000])
    await new Promise((resolve) => setTimeout(resolve, 10))
    // The settlement: the same member, no tokens used, cancelled (out of the request count).
    expect(calls).toHaveLength(2)
    expect([calls[1][0], calls[1][1], calls[1][3]]).toEqual([calls[0][0], 0, 1])
  })

  it("layerOff admits everything and counts nothing", () => {
    const admission = Effect.runSync(Effect.flatMap(Effect.service(Limits), (limits) => limits.admit(SUBJECT, ESTIMATE)).pipe(Effect.provide(Limits.layerOff)))
    expect(admission).toMatchObject({ _tag: "Admitted", headers: undefined })
  })

  it("reset times are written as OpenAI writes them", () => {
    expect([resetText(250), resetText(1000), resetText(59_000), resetText(60_000), resetText(90_000)]).toEqual(["250ms", "1s", "59s", "1m0s", "1m30s"])
  })
})

