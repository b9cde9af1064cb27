/**
 * A caller that reads slower than the upstream writes holds the upstream back
 * (backpressure); that silence is the gateway's doing, not the upstream's, so
 * it must never trip the upstream's idle timeout.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

let upstream: http.Server
let gateway: RunningGateway
const EVENTS = 20_000
const piece = "x".repeat(1000)
const chunk = (delta: unknown, finish: string | null) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-4o", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

beforeAll(async () => {
  // ~20 MB of events, written as fast as the gateway accepts them.
  upstream = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      let sent = 0
      const write = () => {
        while (sent < EVENTS) {
          sent++
          if (!res.write(chunk({ content: piece }, null))) {
            res.once("drain", write)
            return
          }
        }
        res.write(chunk({}, "stop"))
        res.end("data: [DONE]\n\n")
      }
      write()
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", () => resolve()))
  const port = (upstream.address() as AddressInfo).port
  gateway = await startGateway({
    providers: { openai: { base_url: `http://127.0.0.1:${port}/v1`, models: ["gpt-4o"], credential: "none", timeout_ms: 300 } },
    routing: { retry: { max_retries: 0 } }
  })
})
afterAll(async () => {
  await gateway.close()
  upstream.close()
})

describe("backpressure", () => {
  it("a caller that stops reading for longer than the upstream timeout still gets the whole stream", async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const request = http.request(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" } }, (response) => {
        response.pause()
        setTimeout(() => {
          const chunks: Array<Buffer> = []
          response.on("data", (data: Buffer) => chunks.push(data))
          response.on("end", () => resolve(Buffer.concat(chunks).toString()))
          response.on("error", reject)
          response.resume()
        }, 1500)
      })
      request.on("error", reject)
      request.end(JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "hi" }] }))
    })
    expect(text).not.toContain('"error"')
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true)
    expect(text.split(piece).length - 1).toBe(EVENTS)
  })
})
