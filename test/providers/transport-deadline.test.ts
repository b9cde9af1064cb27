/**
 * The live undici transport's timeouts under `TestClock`: a real loopback
 * server that stalls, and virtual time that passes only when the test says so.
 * A 60 s deadline costs no wall-clock time; a timer outside Effect's clock
 * would never fire here and the test would hang.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Queue, Stream } from "effect"
import type { Layer } from "effect"
import { TestClock } from "effect/testing"
import { createServer } from "node:http"
import type { Server, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { UpstreamError } from "../../src/domain/index.ts"
import { pushStream } from "../../src/pipeline/index.ts"
import { ProviderClient } from "../../src/providers/transport.ts"
import type { UpstreamCall } from "../../src/providers/transport.ts"

const IDLE_MS = 60_000

let server: Server
let origin = ""
/** What the server does with the next request: `answer` is called with the open response. */
let answer: (res: ServerResponse) => void = () => {}
/** Each request the server received, as it arrives. */
let arrived: () => void = () => {}

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      arrived()
      answer(res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
)

const call: (idleTimeoutMs?: number) => UpstreamCall = (idleTimeoutMs = IDLE_MS) => ({
  providerId: "p",
  family: "openai",
  origin,
  method: "POST",
  path: "/v1/chat/completions",
  headers: { "content-type": "application/json" },
  body: "{}",
  idleTimeoutMs
})

/** Resolves when the server has the next request. */
const nextArrival = () => new Promise<void>((resolve) => (arrived = resolve))

const timeoutOf = (exit: Exit.Exit<unknown, unknown>): { readonly message: string; readonly timedOut: boolean } => {
  assert.isTrue(Exit.isFailure(exit))
  const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
  assert.instanceOf(error, UpstreamError)
  return { message: (error as UpstreamError).message, timedOut: (error as UpstreamError).timedOut }
}

const live = ProviderClient.layer as Layer.Layer<ProviderClient>

describe("live transport timeouts on Effect's clock", () => {
  it.effect("a head that never comes times out after idle_timeout of virtual time, not before", () =>
    Effect.gen(function* () {
      answer = () => {}
      const request = nextArrival()
      const client = yield* ProviderClient
      const fiber = yield* Effect.forkChild(Effect.scoped(client.send(call())))
      yield* Effect.promise(() => request)
      yield* TestClock.adjust(IDLE_MS - 1)
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust(1)
      const failure = timeoutOf(yield* Effect.exit(Fiber.join(fiber)))
      assert.deepStrictEqual(failure, { message: `no response within ${IDLE_MS} ms`, timedOut: true })
    }).pipe(Effect.provide(live)))

  it.effect("a streamed body that stalls times out idle_timeout after its last chunk: each chunk restarts the wait", () =>
    Effect.gen(function* () {
      let more: () => void = () => {}
      answer = (res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("data: a\n\n")
        more = () => res.write("data: b\n\n")
      }
      const chunks = yield* Queue.unbounded<string>()
      const client = yield* ProviderClient
      const fiber = yield* Effect.forkChild(
        Effect.scoped(
          Effect.flatMap(client.send(call()), (response) =>
            Stream.runForEach(pushStream({ start: response.body.attach, stop: response.body.abort }), (chunk) => Queue.offer(chunks, Buffer.from(chunk).toString()))
          )
        )
      )
      assert.strictEqual(yield* Queue.take(chunks), "data: a\n\n")
      yield* TestClock.adjust(IDLE_MS - 20_000)
      more()
      assert.strictEqual(yield* Queue.take(chunks), "data: b\n\n")
      // Past the first deadline, but within idle_timeout of the second chunk.
      yield* TestClock.adjust(IDLE_MS - 1)
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust(1)
      const failure = timeoutOf(yield* Effect.exit(Fiber.join(fiber)))
      assert.deepStrictEqual(failure, { message: `no data for ${IDLE_MS} ms`, timedOut: true })
    }).pipe(Effect.provide(live)))

  it.effect("a provider with a shorter timeout times out on time while a slower provider's request is open", () =>
    Effect.gen(function* () {
      answer = () => {}
      const client = yield* ProviderClient
      const first = nextArrival()
      const patient = yield* Effect.forkChild(Effect.scoped(client.send(call(10 * IDLE_MS))))
      yield* Effect.promise(() => first)
      const second = nextArrival()
      const hasty = yield* Effect.forkChild(Effect.scoped(client.send(call())))
      yield* Effect.promise(() => second)
      yield* TestClock.adjust(IDLE_MS)
      const failure = timeoutOf(yield* Effect.exit(Fiber.join(hasty)))
      assert.deepStrictEqual(failure, { message: `no response within ${IDLE_MS} ms`, timedOut: true })
      assert.isUndefined(patient.pollUnsafe())
      // Before the client closes: closing it waits for the requests still open.
      yield* Fiber.interrupt(patient)
    }).pipe(Effect.provide(live)))
})
