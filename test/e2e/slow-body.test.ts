/**
 * `[server] body_min_bytes_per_sec`: a caller that dribbles its request body
 * (a little at a time, so it never stalls outright) is answered 408 in its
 * own format and disconnected, while an upload at a real rate, or one that the
 * gateway itself holds up (a slow upstream), is never cut. The limits are
 * configured small so each test takes about two seconds.
 */
import * as Http from "node:http"
import { connect } from "node:net"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayWithFakes, startGateway } from "./harness.ts"

const MIN_RATE = 100

/** A passthrough upstream that reads nothing for `holdMs`, then reads the whole body and answers with its size. */
let holdMs = 0
let slowUpstream: Http.Server
let slowUpstreamUrl: string
beforeAll(async () => {
  slowUpstream = Http.createServer((req, res) => {
    setTimeout(() => {
      let size = 0
      req.on("data", (chunk: Buffer) => (size += chunk.byteLength))
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ size })))
    }, holdMs)
  })
  await new Promise<void>((resolve) => slowUpstream.listen(0, "127.0.0.1", resolve))
  slowUpstreamUrl = `http://127.0.0.1:${(slowUpstream.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => slowUpstream.close(() => resolve())))

const { gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    server: { body_idle_timeout_secs: 1, body_min_bytes_per_sec: MIN_RATE },
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "none" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "none" }
    }
  })
)

/** `json` padded with spaces to `size` bytes: still a valid body, only longer. */
const padded = (json: Record<string, unknown>, size: number): Buffer => {
  const text = JSON.stringify(json)
  return Buffer.from(text.slice(0, -1) + " ".repeat(size - text.length) + "}")
}

/**
 * Sends the head, then the body in pieces of `pieceBytes` every `everyMs`;
 * resolves with what the gateway answered once it closes the connection (or
 * the whole body was sent and answered). Bounded by the body's length.
 */
const sendPaced = (path: string, body: Buffer, pieceBytes: number, everyMs: number, port = gateway.port) =>
  new Promise<{ text: string; sent: number }>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    let text = ""
    let sent = 0
    socket.on("error", () => {})
    socket.on("data", (chunk) => (text += chunk.toString("latin1")))
    const timer = setInterval(() => {
      if (sent >= body.length || socket.destroyed || socket.writableEnded) return clearInterval(timer)
      socket.write(body.subarray(sent, sent + pieceBytes))
      sent += pieceBytes
    }, everyMs)
    const deadline = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close; read: ${text.slice(0, 200)}`))
    }, (body.length / pieceBytes) * everyMs + 5000)
    socket.on("close", () => {
      clearInterval(timer)
      clearTimeout(deadline)
      resolve({ text, sent: Math.min(sent, body.length) })
    })
    socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${body.length}\r\n\r\n`)
  })

const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4))

describe("server.body_min_bytes_per_sec", () => {
  it("a body dribbled below the minimum rate gets 408 in the caller's format and a closed connection", async () => {
    // 20 bytes/s: progress every 50 ms, so the no-progress rule alone would wait for all 5 s of it.
    const chat = padded({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }, 100)
    const openai = await sendPaced("/v1/chat/completions", chat, 1, 50)
    expect(openai.text).toMatch(/^HTTP\/1\.1 408/)
    expect(openai.text.toLowerCase()).toContain("connection: close")
    expect(openai.sent).toBeLessThan(chat.length)
    expect(bodyOf(openai.text)).toMatchObject({ error: { code: "request_timeout", message: `the request body arrived slower than ${MIN_RATE} bytes/s` } })

    const messages = padded({ model: "claude-e2e", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }, 100)
    const anthropic = await sendPaced("/v1/messages", messages, 1, 50)
    expect(anthropic.text).toMatch(/^HTTP\/1\.1 408/)
    expect(bodyOf(anthropic.text)).toMatchObject({ type: "error", error: { type: "invalid_request_error", code: "request_timeout" } })
  })

  it("an upload above the minimum rate that outlasts the head start is never cut", async () => {
    // 40 pieces of 50 bytes every 50 ms: 1000 bytes/s, for two seconds.
    const chat = padded({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }, 2000)
    const { text } = await sendPaced("/v1/chat/completions", chat, 50, 50)
    expect(text).toMatch(/^HTTP\/1\.1 200/)
  })

  it("an upload the upstream holds back is not counted against the caller", async () => {
    // 8 MiB/s: a rate no caller keeps while the upstream reads nothing for 2.5 s (what the kernel buffers
    // before then is far below 20 MiB), and one that loopback meets with room to spare once the wait is over.
    const strict = await startGateway({
      server: { body_idle_timeout_secs: 1, body_min_bytes_per_sec: 8 * 1024 * 1024 },
      providers: { gemini: { base_url: slowUpstreamUrl, credential: "none" } }
    })
    holdMs = 2500
    try {
      const body = Buffer.alloc(16 * 1024 * 1024, 120)
      const { text } = await sendPaced("/v1/gemini/models/x:generateContent", body, body.length, 1, strict.port)
      expect(text).toMatch(/^HTTP\/1\.1 200/)
      expect(text).toContain(JSON.stringify({ size: body.length }))
    } finally {
      holdMs = 0
      await strict.close()
    }
  })
})
