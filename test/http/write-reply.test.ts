/**
 * The edge's one writer, driven through the real request listener on
 * loopback: a program answers with a `Reply` whose body is a stream, and the
 * caller reads slowly, hangs up, or sees the stream fail after the head.
 */
import { Context, Deferred, Effect, Exit, Stream } from "effect"
import { createServer, request } from "node:http"
import type { IncomingMessage, Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { UpstreamError } from "../../src/domain/index.ts"
import { makeRequestListener } from "../../src/http/server.ts"
import { Router } from "../../src/http/router.ts"
import { JsonLog, reply } from "../../src/pipeline/index.ts"
import type { ReplyStream } from "../../src/pipeline/index.ts"

const CHUNK = 64 * 1024
/** Far more than any socket buffer holds: a writer that ignores backpressure would pull them all. */
const CHUNKS = 4096

let server: Server | undefined
afterEach(() => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))))

/** Serves one route, `GET /reply`, answered with a reply whose body is `body`. */
const serve = async (body: ReplyStream): Promise<number> => {
  const router = new Router([{ method: "GET", path: "/reply", handler: () => Effect.succeed(reply(200, { "content-type": "application/octet-stream" }, body)) }])
  server = createServer(makeRequestListener(router, Context.empty(), new JsonLog("none")))
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve))
  return (server!.address() as AddressInfo).port
}

const get = (port: number): Promise<IncomingMessage> =>
  new Promise((resolve, reject) => request({ host: "127.0.0.1", port, path: "/reply" }, resolve).on("error", reject).end())

/** A body of `CHUNKS` chunks that counts how many were pulled and reports how it ended. */
const countedBody = () => {
  let pulled = 0
  const ended = Effect.runSync(Deferred.make<Exit.Exit<void, unknown>>())
  const body: ReplyStream = Stream.fromEffectRepeat(Effect.sync(() => {
    pulled++
    return new Uint8Array(CHUNK)
  })).pipe(
    Stream.take(CHUNKS),
    Stream.onExit((exit) => Deferred.succeed(ended, Exit.asVoid(exit)))
  )
  return { body, pulled: () => pulled, ended: Effect.runPromise(Deferred.await(ended)) }
}

/** Resolves once `count` stops moving (the same over five looks 20 ms apart), or after 200 looks. */
const settled = async (count: () => number): Promise<void> => {
  let last = -1
  let same = 0
  for (let look = 0; look < 200 && same < 5; look++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    same = count() === last ? same + 1 : 0
    last = count()
  }
}

describe("a streamed reply", () => {
  it("is read from only as fast as the caller reads, and a caller that hangs up interrupts it", async () => {
    const counted = countedBody()
    const port = await serve(counted.body)
    const response = await get(port)
    expect(response.statusCode).toBe(200)
    expect(response.headers["x-request-id"]).toBeDefined()
    // The caller reads nothing: once the socket's buffers are full the writer waits for `drain`.
    response.pause()
    await settled(counted.pulled)
    expect(counted.pulled()).toBeGreaterThan(0)
    expect(counted.pulled()).toBeLessThan(CHUNKS / 4)
    response.destroy()
    const exit = await counted.ended
    expect(Exit.hasInterrupts(exit)).toBe(true)
    expect(counted.pulled()).toBeLessThan(CHUNKS)
  })

  it("that fails after its head cuts the connection instead of ending it cleanly", async () => {
    // The failure waits until the caller has the head and the first bytes.
    const go = Effect.runSync(Deferred.make<void>())
    const body: ReplyStream = Stream.concat(
      Stream.make(new TextEncoder().encode("partial")),
      Stream.fromEffect(Effect.flatMap(Deferred.await(go), () => Effect.fail(UpstreamError.fault({ providerId: "openai", family: "openai" }, "the upstream stream broke", { status: 200 }))))
    )
    const port = await serve(body)
    const response = await get(port)
    expect(response.statusCode).toBe(200)
    const outcome = await new Promise<string>((resolve) => {
      let received = ""
      response.on("data", (chunk: Buffer) => {
        received += chunk.toString()
        Effect.runSync(Deferred.succeed(go, undefined))
      })
      response.on("end", () => resolve(`ended cleanly after ${received}`))
      response.on("error", () => resolve(`cut after ${received}`))
      response.on("aborted", () => resolve(`cut after ${received}`))
    })
    expect(outcome).toBe("cut after partial")
  })
})
