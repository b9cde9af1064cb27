/**
 * Hostile callers and misbehaving upstreams (issue "Hardening"): every probe
 * gets a clear answer in the caller's format, never a truncated success, a
 * hang, a crash or a leaked secret. Limits are exercised at their boundary.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { connect } from "node:net"
import type { Socket } from "node:net"
import type { ServerResponse } from "node:http"
import { beforeAll, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicStartMessage, openAiChunk, startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { ScriptContext } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, startGateway } from "./harness.ts"

const KEY = "sk-configured-secret-0123456789"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, gemini: { kind: "generic" } },
  (fakes) => ({
    server: { body_idle_timeout_secs: 1, body_min_bytes_per_sec: 10, max_body_bytes: 1024 * 1024, max_upload_bytes: 1024 * 1024 },
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "gpt-4o-quick"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "env::OPENAI_KEY" },
      gemini: { base_url: fakes.gemini.url, credential: "env::OPENAI_KEY" }
    },
    models: { "gpt-4o-quick": { timeout_ms: 300 } },
    targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-e2e" } },
    routes: { gpt_then_claude: { endpoint: "chat", models: ["gpt-then-claude"], strategy: "fallback", targets: ["gpt", "claude"], retry: { max_retries: 0 } } },
    routing: { retry: { max_retries: 0 } }
  }),
  { OPENAI_KEY: KEY }
)
let openai: OpenAI
let anthropic: Anthropic

beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
})

const custom = (handle: (res: ServerResponse, ctx: ScriptContext) => void | Promise<void>) => ({
  kind: "custom" as const,
  handle: (ctx: ScriptContext) => handle(ctx.res, ctx)
})

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}, path = "/v1/chat/completions") =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

const ask = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }
const completion = JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "whole" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })

/** A raw HTTP/1.1 exchange: writes `request`, resolves with everything read until the server closes. */
const rawExchange = (request: string | Buffer, options: { keepWriting?: () => Buffer | undefined; timeoutMs?: number } = {}) =>
  new Promise<{ text: string; written: number }>((resolve, reject) => {
    const socket: Socket = connect(gateway.port, "127.0.0.1")
    let text = ""
    let written = 0
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close within ${options.timeoutMs ?? 5000} ms; read: ${text.slice(0, 200)}`))
    }, options.timeoutMs ?? 5000)
    socket.on("error", () => {})
    socket.on("data", (chunk) => (text += chunk.toString("latin1")))
    socket.on("close", () => {
      clearTimeout(timer)
      resolve({ text, written })
    })
    socket.write(request)
    const pump = () => {
      const more = options.keepWriting?.()
      if (more === undefined || socket.destroyed) return
      written += more.length
      if (socket.write(more)) setImmediate(pump)
      else socket.once("drain", pump)
    }
    pump()
  })

describe("a non-streamed success is committed only when it is whole and good", () => {
  it("an upstream that stalls mid-body is a timeout (504), not a truncated 200", async () => {
    fakes.openai.script(custom((res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(completion.length) })
      res.write(completion.slice(0, 20))
    }))
    const response = await chat({ ...ask, model: "gpt-4o-quick" })
    expect(response.status).toBe(504)
    expect(response.headers.get("x-gw-error-code")).toBe("upstream")
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("timed out")
  })

  it("an upstream that resets mid-body fails over to the next target", async () => {
    fakes.openai.script(custom((res, ctx) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write(completion.slice(0, 30))
      setTimeout(() => ctx.res.socket?.destroy(), 10)
    }))
    const response = await openai.chat.completions.create({ model: "gpt-then-claude", messages: [{ role: "user", content: "reset" }] }).withResponse()
    expect(response.data.choices[0].message.content).toBe("echo: reset")
    expect(response.response.headers.get("x-gw-upstream-provider")).toBe("anthropic")
  })

  it("a 200 with garbage is a 502 that says the response was invalid, in the caller's format", async () => {
    fakes.openai.script({ kind: "json", body: "this is not json {", headers: { "content-type": "application/json" } })
    const response = await chat(ask)
    expect(response.status).toBe(502)
    const body = await response.json() as { error: { message: string } }
    expect(body.error.message).toBe("provider sent an invalid response (upstream sent a response that is not valid JSON)")
    fakes.openai.script({ kind: "json", body: "<html>oops</html>", headers: { "content-type": "text/html" } })
    const translated = await anthropic.messages.create({ model: "gpt-4o", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(translated).toMatchObject({ status: 502, error: { type: "error", error: { type: "api_error" } } })
    expect(JSON.stringify((translated as { error: unknown }).error)).not.toContain("status 502")
  })

  it("a streamed 200 whose events stop parsing ends with the error frame", async () => {
    fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" }), openAiChunk({ content: "Hel" }), "data: {not json\n\n", openAiChunk({ content: "lo" })] })
    const response = await chat({ ...ask, stream: true })
    const text = await response.text()
    expect(text).toContain('"content":"Hel"')
    expect(text).not.toContain('"content":"lo"')
    expect(text.trimEnd().endsWith("}")).toBe(true)
    expect(text).toContain('data: {"error":')
    expect(text).not.toContain("[DONE]")
  })
})

describe("1xx and 3xx are not answers", () => {
  it("an interim 102 is skipped; the caller gets the final answer", async () => {
    fakes.openai.script(custom((res) => {
      res.writeProcessing()
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(completion), 20)
    }))
    const response = await chat(ask)
    expect(response.status).toBe(200)
    expect(((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toBe("whole")
  })

  it("a redirect is never followed nor handed over: 502 upstream, no Location", async () => {
    fakes.openai.script(custom((res) => {
      res.writeHead(307, { location: "http://203.0.113.7/v1/chat/completions" }).end()
    }))
    const response = await chat(ask, {}, "/v1/chat/completions")
    expect(response.status).toBe(502)
    expect(response.headers.get("location")).toBeNull()
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe("provider returned status 307")
    expect(fakes.openai.requests.length).toBe(1)
  })
})

describe("one huge event", () => {
  const big = "z".repeat(5 * 1024 * 1024)
  it("a 5 MB event passes the same-format path whole", async () => {
    fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" }), openAiChunk({ content: big }), openAiChunk({}, { finishReason: "stop" }), "data: [DONE]\n\n"] })
    const text = await (await chat({ ...ask, stream: true })).text()
    expect(text.length).toBeGreaterThan(big.length)
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
  })

  it("a 5 MB event is translated whole", async () => {
    fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" }), openAiChunk({ content: big }), openAiChunk({}, { finishReason: "stop" }), "data: [DONE]\n\n"] })
    const message = await anthropic.messages.stream({ model: "gpt-4o", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).finalMessage()
    expect(message.content[0]).toMatchObject({ type: "text" })
    expect((message.content[0] as { text: string }).text.length).toBe(big.length)
  })
})

describe("limits that cannot be bypassed", () => {
  /** A request body sent chunked (no content-length), one piece each time the gateway reads. */
  const chunked = (chunks: Array<Buffer>) => ({
    body: new ReadableStream({ pull(controller) {
      const next = chunks.shift()
      if (next === undefined) controller.close()
      else controller.enqueue(next)
    } }),
    duplex: "half"
  })

  it("a chunked passthrough body past max_body_bytes is stopped with 413", async () => {
    const chunks = Array.from({ length: 40 }, () => Buffer.alloc(64 * 1024, 97))
    const response = await fetch(`${gateway.url}/v1/gemini/models/x:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      ...chunked(chunks)
    } as RequestInit).catch((e: unknown) => e)
    if (response instanceof Response) {
      expect(response.status).toBe(413)
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain("max_body_bytes")
    } else {
      // The gateway closed the connection right after its 413; the client may see the close first.
      expect(String(response)).toMatch(/fetch failed|other side closed|socket/i)
    }
  })

  it("a chunked file upload past max_upload_bytes is stopped with 413", async () => {
    const boundary = "----b"
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`)
    const chunks = [head, ...Array.from({ length: 40 }, () => Buffer.alloc(64 * 1024, 98))]
    const response = await fetch(`${gateway.url}/v1/files`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      ...chunked(chunks)
    } as RequestInit).catch((e: unknown) => e)
    if (response instanceof Response) expect(response.status).toBe(413)
    else expect(String(response)).toMatch(/fetch failed|other side closed|socket/i)
  })

  it("a 413 closes the connection instead of reading the rest of a declared 1 GB body", async () => {
    let sent = 0
    const piece = Buffer.alloc(256 * 1024, 120)
    const { text, written } = await rawExchange(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${1024 ** 3}\r\n\r\n`,
      { keepWriting: () => (sent++ < 4096 ? piece : undefined), timeoutMs: 10_000 }
    )
    expect(text).toMatch(/^HTTP\/1\.1 413/)
    expect(text.toLowerCase()).toContain("connection: close")
    expect(written).toBeLessThan(256 * 1024 * 1024)
  })

  it("a body that makes no progress gets 408 and a closed connection", async () => {
    const { text } = await rawExchange(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"model":`)
    expect(text).toMatch(/^HTTP\/1\.1 408/)
    expect(text).toContain("made no progress")
  })

  it("a slow upload that keeps moving is never cut", async () => {
    const body = JSON.stringify(ask)
    const socket = connect(gateway.port, "127.0.0.1")
    let text = ""
    socket.on("data", (chunk) => (text += chunk.toString()))
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${body.length}\r\n\r\n`)
    const pieces = [body.slice(0, 10), body.slice(10, 20), body.slice(20, 30), body.slice(30)]
    for (const piece of pieces) {
      await new Promise((resolve) => setTimeout(resolve, 450))
      socket.write(piece)
    }
    await new Promise((resolve) => socket.once("close", resolve))
    expect(text).toMatch(/^HTTP\/1\.1 200/)
  })

  it("deep JSON is a 400, in either format", async () => {
    const deep = `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"metadata":${"[".repeat(5000)}${"]".repeat(5000)}}`
    for (const path of ["/v1/chat/completions", "/v1/messages"]) {
      const response = await fetch(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: deep })
      expect(response.status).toBe(400)
      expect(JSON.stringify(await response.json())).toContain("128 levels")
    }
    expect(fakes.openai.requests.length + fakes.anthropic.requests.length).toBe(0)
  })

  it("an out-of-range number and a model given twice are refused", async () => {
    const huge = await fetch(`${gateway.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"model":"gpt-4o","max_tokens":1e400,"messages":[{"role":"user","content":"x"}]}' })
    expect(huge.status).toBe(400)
    const twice = await fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"model":"claude-e2e","messages":[{"role":"user","content":"model"}],"model":"gpt-4o"}' })
    expect(twice.status).toBe(400)
    expect(((await twice.json()) as { error: { message: string } }).error.message).toContain('"model" is given twice')
    const valueNamedModel = await fetch(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"model":"gpt-4o","messages":[{"role":"user","content":"x","name":"model"}]}' })
    expect(valueNamedModel.status).toBe(200)
    expect(fakes.openai.requests.length).toBe(1)
  })

  it("nothing the caller sent is reflected without bound", async () => {
    // As large as this gateway's 1 MiB body limit allows.
    const model = "m".repeat(900 * 1024)
    const response = await chat({ model, messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(404)
    const text = await response.text()
    expect(text.length).toBeLessThan(4096)
    expect(text).toContain("more characters")
    const keys = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`field_${"k".repeat(20)}_${i}`, 1]))
    const dropped = await anthropic.messages.create({ model: "gpt-4o", max_tokens: 5, messages: [{ role: "user", content: "x" }], ...keys } as Anthropic.MessageCreateParamsNonStreaming).withResponse()
    const header = dropped.response.headers.get("x-gw-dropped-params") ?? ""
    expect(header.length).toBeLessThanOrEqual(1100)
    expect(header).toMatch(/\(\d+ more\)$/)
  })
})

describe("browsers cannot spend the configured key", () => {
  it("JSON sent as text/plain, or with no content type, is a 415", async () => {
    for (const type of ["text/plain", undefined]) {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: type === undefined ? {} : { "content-type": type },
        body: new Blob([JSON.stringify(ask)])
      })
      expect(response.status).toBe(415)
      expect(response.headers.get("access-control-allow-origin")).toBeNull()
    }
    expect(fakes.openai.requests.length).toBe(0)
  })

  it("a CORS preflight is not answered with permission", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } })
    expect(response.status).toBe(405)
    expect(response.headers.get("access-control-allow-origin")).toBeNull()
  })
})

describe("configured secrets stay secret", () => {
  const echoKey = (status: number) => custom((res, ctx) => {
    const sent = String(ctx.request.headers.authorization ?? ctx.request.headers["x-api-key"] ?? ctx.request.headers["x-goog-api-key"]).replace(/^Bearer /, "")
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `Incorrect API key provided: ${sent}`, type: "invalid_request_error", code: "invalid_api_key" } }))
  })

  it("a 401 that echoes the key is relayed with the key masked, same format and translated", async () => {
    fakes.openai.script(echoKey(401))
    const same = await chat(ask)
    expect(same.status).toBe(401)
    const sameText = await same.text()
    expect(sameText).not.toContain(KEY)
    expect(sameText).toContain("Incorrect API key provided: [redacted]")
    fakes.openai.script(echoKey(401))
    const translated = await anthropic.messages.create({ model: "gpt-4o", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(JSON.stringify((translated as { error: unknown }).error)).not.toContain(KEY)
  })

  it("a passthrough error that echoes the key is masked too", async () => {
    fakes.gemini.script(echoKey(403))
    const response = await fetch(`${gateway.url}/v1/gemini/models/x:generateContent`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(response.status).toBe(403)
    expect(await response.text()).not.toContain(KEY)
  })
})

describe("connections and shutdown", () => {
  it("connections beyond max_connections are answered 503 and closed", async () => {
    const small = await startGateway({ server: { max_connections: 2 } })
    const open: Array<Socket> = []
    try {
      for (let i = 0; i < 2; i++) {
        const socket = connect(small.port, "127.0.0.1")
        await new Promise((resolve) => socket.once("connect", resolve))
        open.push(socket)
      }
      const third = connect(small.port, "127.0.0.1")
      let text = ""
      third.on("data", (chunk) => (text += chunk.toString()))
      await new Promise((resolve) => third.once("close", resolve))
      expect(text).toMatch(/^HTTP\/1\.1 503/)
      expect(text).toContain("too_many_connections")
    } finally {
      for (const socket of open) socket.destroy()
      await small.close()
    }
  })

  it("a stream still running when the grace period ends gets its error frame; a request after shutdown began gets 503 and a close", async () => {
    const up = await startFakeUpstream({ kind: "anthropic" })
    const small = await startGateway({
      server: { shutdown_grace_secs: 1 },
      providers: { anthropic: { base_url: up.url, models: ["claude-e2e"], credential: "none" } }
    })
    try {
      up.script({
        kind: "sse",
        events: [
          anthropicEvent("message_start", { message: anthropicStartMessage({ id: "msg_s", model: "claude-e2e", blocks: [] }) }),
          anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "partial" } })
        ],
        thenError: "hang"
      })
      // One connection: a stream, and a second request pipelined behind it.
      const socket = connect(small.port, "127.0.0.1")
      let text = ""
      socket.on("data", (chunk) => (text += chunk.toString()))
      const body = JSON.stringify({ model: "claude-e2e", max_tokens: 5, stream: true, messages: [{ role: "user", content: "x" }] })
      socket.write(`POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
      await up.waitForRequests(1)
      while (!text.includes("partial")) await new Promise((resolve) => setTimeout(resolve, 10))
      socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
      const closing = small.close()
      await new Promise((resolve) => socket.once("close", resolve))
      await closing
      expect(text).toContain("event: error")
      expect(text).toContain("shut down before the stream was complete")
      expect(text).not.toContain("message_stop")
      expect(text).toMatch(/HTTP\/1\.1 503[\s\S]*shutting down/)
    } finally {
      await up.close()
    }
  })
})
