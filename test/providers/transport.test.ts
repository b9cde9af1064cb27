/**
 * The undici transport against a raw node:http server on loopback: who owns an
 * exchange, bounded reads, interim and redirect statuses, compressed bodies,
 * and Retry-After in every form.
 */
import { Effect, Exit, Layer, Scope, Stream } from "effect"
import { createServer } from "node:http"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseRetryAfterMs } from "../../src/providers/retry-after.ts"
import { pushStream } from "../../src/pipeline/index.ts"
import { ProviderClient } from "../../src/providers/transport.ts"
import type { UpstreamCall } from "../../src/providers/transport.ts"

type Handler = (req: IncomingMessage, res: ServerResponse) => void

let server: Server
let origin = ""
let handler: Handler = (_req, res) => res.end()
/** Resolves when the current request's connection closed before its response finished. */
let closedEarly: Promise<void> = Promise.resolve()

beforeAll(async () => {
  server = createServer((req, res) => {
    closedEarly = new Promise((resolve) => res.on("close", () => (res.writableFinished ? undefined : resolve())))
    handler(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const call = (overrides: Partial<UpstreamCall> = {}): UpstreamCall => ({
  providerId: "p",
  family: "openai",
  origin,
  method: "POST",
  path: "/x",
  headers: { "content-type": "application/json" },
  body: "{}",
  idleTimeoutMs: 5_000,
  ...overrides
})

const run = <A, E>(effect: Effect.Effect<A, E, ProviderClient | Scope.Scope>) =>
  Effect.runPromiseExit(effect.pipe(Effect.scoped, Effect.provide(ProviderClient.layer as Layer.Layer<ProviderClient>)))

const send = (overrides?: Partial<UpstreamCall>) => Effect.flatMap(ProviderClient, (client) => client.send(call(overrides)))

describe("transport", () => {
  it("a bounded read stops downloading as soon as the body passes the bound", async () => {
    let written = 0
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      const piece = Buffer.alloc(64 * 1024, 120)
      const pump = () => {
        if (res.destroyed || written >= 64 * 1024 * 1024) return res.end()
        written += piece.length
        if (res.write(piece)) setImmediate(pump)
        else res.once("drain", pump)
      }
      pump()
    }
    const exit = await run(Effect.flatMap(send(), (response) => response.body.readAll(1024 * 1024)))
    expect(Exit.isFailure(exit) && String(exit.cause)).toContain("exceeds 1048576 bytes")
    await closedEarly
    expect(written).toBeLessThan(64 * 1024 * 1024)
  })

  it("a body of exactly the bound is read whole; one byte more fails", async () => {
    handler = (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(Buffer.alloc(1000, 97))
    const exact = await run(Effect.flatMap(send(), (response) => Effect.map(response.body.readAll(1000), (body) => body.byteLength)))
    expect(exact).toEqual(Exit.succeed(1000))
    const over = await run(Effect.flatMap(send(), (response) => response.body.readAll(999)))
    expect(Exit.isFailure(over)).toBe(true)
  })

  it("an error body is kept up to 64 KB for classification and the caller's envelope", async () => {
    handler = (_req, res) => res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "m".repeat(100 * 1024) } }))
    const exit = await run(send())
    expect(Exit.isFailure(exit) && exit.cause.reasons[0]._tag === "Fail" && exit.cause.reasons[0].error.body?.byteLength).toBe(64 * 1024)
  })

  it("the attempt's scope owns the exchange: closing it closes the upstream connection", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write("data: {}\n\n")
    }
    const exit = await run(Effect.map(send(), (response) => response.status))
    expect(exit).toEqual(Exit.succeed(200))
    await closedEarly
  })

  it("an interim 1xx is skipped: the answer is the final status", async () => {
    handler = (_req, res) => {
      res.writeProcessing()
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end("{\"ok\":true}"), 20)
    }
    const exit = await run(Effect.flatMap(send(), (response) => Effect.map(response.body.readAll(1024), (body) => [response.status, Buffer.from(body).toString()])))
    expect(exit).toEqual(Exit.succeed([200, "{\"ok\":true}"]))
  })

  it("a 3xx is never followed: it fails as upstream, its Location forgotten", async () => {
    let requests = 0
    handler = (_req, res) => {
      requests++
      res.writeHead(302, { location: "http://203.0.113.9/steal" }).end()
    }
    const exit = await run(send())
    expect(requests).toBe(1)
    expect(Exit.isFailure(exit) && exit.cause.reasons[0]._tag === "Fail" && exit.cause.reasons[0].error).toMatchObject({
      reason: "upstream",
      upstreamStatus: 302,
      status: 502
    })
  })

  it("with decode, a gzip body is read decoded and the encoding header is gone; without, the bytes stay as they came", async () => {
    const zipped = gzipSync("data: {\"a\":1}\n\n")
    handler = (_req, res) => res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" }).end(zipped)
    const decoded = await run(Effect.flatMap(send({ decode: true }), (response) =>
      Effect.map(Stream.runCollect(pushStream({ start: response.body.attach, stop: response.body.abort })), (chunks) => [response.headers["content-encoding"], Buffer.concat([...chunks]).toString()])))
    expect(decoded).toEqual(Exit.succeed([undefined, "data: {\"a\":1}\n\n"]))
    const raw = await run(Effect.flatMap(send(), (response) =>
      Effect.map(response.body.readAll(1024), (body) => [response.headers["content-encoding"], Buffer.from(body).equals(zipped)])))
    expect(raw).toEqual(Exit.succeed(["gzip", true]))
  })

  it("an error body that is compressed is decoded for classification", async () => {
    handler = (_req, res) =>
      res.writeHead(429, { "content-type": "application/json", "content-encoding": "gzip" })
        .end(gzipSync(JSON.stringify({ error: { message: "no money", type: "insufficient_quota", code: "insufficient_quota" } })))
    const exit = await run(send())
    expect(Exit.isFailure(exit) && exit.cause.reasons[0]._tag === "Fail" && exit.cause.reasons[0].error).toMatchObject({ reason: "quota", message: "no money" })
  })

  it("with errorBodies: stream, a 4xx is handed over like a success, its whole body unread", async () => {
    const big = JSON.stringify({ error: { message: "x".repeat(200 * 1024) } })
    handler = (_req, res) => res.writeHead(400, { "content-type": "application/json" }).end(big)
    const exit = await run(Effect.flatMap(send({ errorBodies: "stream" }), (response) =>
      Effect.map(response.body.readAll(1024 * 1024), (body) => [response.status, body.byteLength])))
    expect(exit).toEqual(Exit.succeed([400, Buffer.byteLength(big)]))
  })
})

describe("Retry-After", () => {
  const now = Date.parse("2026-01-01T00:00:00Z")
  it("reads integer and fractional seconds, milliseconds (which win), and future HTTP dates", () => {
    expect(parseRetryAfterMs({ "retry-after": "7" }, now)).toBe(7000)
    expect(parseRetryAfterMs({ "retry-after": "1.5" }, now)).toBe(1500)
    expect(parseRetryAfterMs({ "retry-after": "0" }, now)).toBe(0)
    expect(parseRetryAfterMs({ "retry-after-ms": "250", "retry-after": "9" }, now)).toBe(250)
    expect(parseRetryAfterMs({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }, now)).toBe(30_000)
  })
  it("a past date, garbage or a negative value is no hint at all (never a synthesized 0)", () => {
    expect(parseRetryAfterMs({ "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }, now)).toBeUndefined()
    expect(parseRetryAfterMs({ "retry-after": "soon" }, now)).toBeUndefined()
    expect(parseRetryAfterMs({ "retry-after": "-3" }, now)).toBeUndefined()
    expect(parseRetryAfterMs({ "retry-after": "1.5.2" }, now)).toBeUndefined()
    expect(parseRetryAfterMs({}, now)).toBeUndefined()
  })
  it("an absurd wait is clamped to a day", () => {
    expect(parseRetryAfterMs({ "retry-after": "99999999" }, now)).toBe(86_400_000)
  })
})
