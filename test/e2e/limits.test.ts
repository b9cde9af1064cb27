/**
 * Every limit of docs/operations.md ("Limits"), at its boundary: the last
 * accepted size is accepted, one more is refused (or handled as documented).
 * Limits that hardening.test.ts and the unit tests already pin are named there.
 */
import OpenAI from "openai"
import { connect } from "node:net"
import type { ServerResponse } from "node:http"
import { describe, expect, it } from "vitest"
import { ECHO_LIMIT } from "../../src/domain/index.ts"
import { MAX_JSON_DEPTH } from "../../src/http/json-guard.ts"
import { HOLD_LIMIT } from "../../src/pipeline/forward/index.ts"
import { openAiChunk, openAiStreamError } from "../fixtures/fake-upstream.ts"
import type { ScriptContext } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

const MAX_BODY = 4096
const MAX_UPLOAD = 8192

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    server: { max_body_bytes: MAX_BODY, max_upload_bytes: MAX_UPLOAD, header_timeout_secs: 1, client_idle_timeout_secs: 1 },
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "text-embedding-3-small"], credential: "none" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "none" }
    },
    targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-e2e" } },
    routes: { gpt_then_claude: { endpoint: "chat", models: ["gpt-then-claude"], strategy: "fallback", targets: ["gpt", "claude"], retry: { max_retries: 0 } } },
    routing: { retry: { max_retries: 0 } }
  })
)

const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = { "content-type": "application/json" }) =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers, body })

/** A chat body of exactly `size` bytes (padded with whitespace). */
const chatBodyOf = (size: number): string => {
  const body = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
  return body.slice(0, -1) + " ".repeat(size - body.length) + "}"
}

describe("server.max_body_bytes", () => {
  it("a JSON body of exactly the limit is accepted; one byte more is a 413", async () => {
    expect((await post("/v1/chat/completions", chatBodyOf(MAX_BODY))).status).toBe(200)
    expect((await post("/v1/chat/completions", chatBodyOf(MAX_BODY + 1))).status).toBe(413)
  })
})

describe("server.max_upload_bytes", () => {
  const form = (size: number) => {
    const boundary = "b0undary"
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`
    const tail = `\r\n--${boundary}--\r\n`
    const body = Buffer.concat([Buffer.from(head), Buffer.alloc(size - head.length - tail.length, 97), Buffer.from(tail)])
    return { body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } }
  }
  it("a file upload of exactly the limit goes through; one byte more is a 413 and nothing is forwarded", async () => {
    const exact = form(MAX_UPLOAD)
    expect((await post("/v1/files", exact.body, exact.headers)).status).toBe(200)
    const over = form(MAX_UPLOAD + 1)
    expect((await post("/v1/files", over.body, over.headers)).status).toBe(413)
    expect(fakes.openai.requests.length).toBe(1)
  })
})

describe("JSON depth", () => {
  // The body is level 1 and `metadata` level 2: the arrays inside make up the rest.
  const nested = (depth: number) =>
    `{"model":"claude-e2e","max_tokens":5,"messages":[{"role":"user","content":"x"}],"metadata":{"user_id":"u","x":${"[".repeat(depth - 2)}${"]".repeat(depth - 2)}}}`
  it(`a body nested ${MAX_JSON_DEPTH} levels deep is read; ${MAX_JSON_DEPTH + 1} is a 400`, async () => {
    expect((await post("/v1/messages", nested(MAX_JSON_DEPTH))).status).not.toBe(400)
    expect((await post("/v1/messages", nested(MAX_JSON_DEPTH + 1))).status).toBe(400)
  })
})

describe("echoed caller values", () => {
  it(`a model name of ${ECHO_LIMIT} characters is echoed whole; a longer one is cut with a count`, async () => {
    const exact = "m".repeat(ECHO_LIMIT)
    const whole = await (await post("/v1/chat/completions", JSON.stringify({ model: exact, messages: [] }))).json() as { error: { message: string } }
    expect(whole.error.message).toContain(exact)
    expect(whole.error.message).not.toContain("more characters")
    const cut = await (await post("/v1/chat/completions", JSON.stringify({ model: `${exact}mm`, messages: [] }))).json() as { error: { message: string } }
    expect(cut.error.message).toContain("(2 more characters)")
  })
})

describe("server.header_timeout_secs", () => {
  it("headers that stop arriving get the connection closed", async () => {
    const socket = connect(gateway.port, "127.0.0.1")
    socket.on("error", () => {})
    let text = ""
    socket.on("data", (chunk) => (text += chunk.toString()))
    socket.write("POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
    await new Promise((resolve) => socket.once("close", resolve))
    expect(text === "" || text.startsWith("HTTP/1.1 408")).toBe(true)
  })
})

describe("server.client_idle_timeout_secs", () => {
  it("a caller that stops reading a stream is disconnected, and the upstream request closed", async () => {
    // An upstream that writes as fast as it may: the caller's buffers fill, then nothing moves.
    fakes.openai.script({
      kind: "custom",
      handle: ({ res }: ScriptContext) =>
        new Promise<void>((resolve) => {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.write(openAiChunk({ role: "assistant", content: "" }))
          const frame = openAiChunk({ content: "y".repeat(64 * 1024) })
          const pump = () => {
            while (!res.destroyed && res.write(frame));
            if (res.destroyed) resolve()
            else res.once("drain", pump)
          }
          res.once("close", resolve)
          pump()
        })
    })
    const socket = connect(gateway.port, "127.0.0.1")
    socket.on("error", () => {})
    const body = JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "x" }] })
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
    // A paused caller never reads the gateway's close; the upstream side shows it.
    socket.pause()
    await fakes.openai.waitForClosedEarly(1, 10_000)
    const logs = await waitForRequestLogs(gateway, gateway.requestLogs().length || 1)
    expect(logs.at(-1)).toMatchObject({ path: "/v1/chat/completions", aborted: true })
    socket.destroy()
  })
})

describe(`held non-stream bodies (${HOLD_LIMIT} bytes)`, () => {
  const garbage = (size: number) => ({
    kind: "custom" as const,
    handle: ({ res }: ScriptContext) => {
      ;(res as ServerResponse).writeHead(200, { "content-type": "application/json", "content-length": String(size) })
      res.end(Buffer.alloc(size, 120))
    }
  })
  it("a body up to the hold limit is checked before it is sent: garbage is a 502", async () => {
    fakes.openai.script(garbage(HOLD_LIMIT))
    expect((await post("/v1/embeddings", JSON.stringify({ model: "text-embedding-3-small", input: "x" }))).status).toBe(502)
  })
  it("a body past the hold limit is streamed as it comes, unchecked", async () => {
    fakes.openai.script(garbage(HOLD_LIMIT + 1))
    const response = await post("/v1/embeddings", JSON.stringify({ model: "text-embedding-3-small", input: "x" }))
    expect(response.status).toBe(200)
    expect((await response.arrayBuffer()).byteLength).toBe(HOLD_LIMIT + 1)
  })
})

describe("a stream's preamble (1 MiB)", () => {
  const role = openAiChunk({ role: "assistant", content: "" })
  const preamble = (bytes: number) => Array.from({ length: Math.ceil(bytes / role.length) }, () => role)
  it("an error after a preamble under 1 MiB is still the attempt's failure: the next target answers", async () => {
    fakes.openai.script({ kind: "sse", events: [...preamble(900 * 1024), openAiStreamError()] })
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "x", maxRetries: 0 })
    const stream = await client.chat.completions.create({ model: "gpt-then-claude", stream: true, messages: [{ role: "user", content: "after" }] })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("echo: after")
  })
  it("a preamble over 1 MiB commits the stream: a later error is the stream's error frame", async () => {
    fakes.openai.script({ kind: "sse", events: [...preamble(1100 * 1024), openAiStreamError()] })
    const response = await post("/v1/chat/completions", JSON.stringify({ model: "gpt-then-claude", stream: true, messages: [{ role: "user", content: "x" }] }))
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('data: {"error":')
    expect(fakes.anthropic.requests.length).toBe(0)
  })
})
