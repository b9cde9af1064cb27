/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) on every route that goes upstream, in
 * both directions: the headers a caller's `Connection` header names, and the
 * WebSocket handshake's `sec-websocket-*`, are for the gateway alone; the
 * headers an upstream's `Connection` names, and its `upgrade`, `trailer`,
 * `proxy-*` and `te`, are for the gateway alone too. Any other header still
 * passes. Sent and read with `node:http` because `fetch` refuses to send
 * `Connection` and `Sec-*` headers at all.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, gemini: { kind: "generic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "text-embedding-3-small", "whisper-1"], credential: "none" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "none" },
      gemini: { base_url: `${fakes.gemini.url}/v1beta`, credential: "none" }
    }
  })
)

const HOP_BY_HOP = {
  connection: "keep-alive, X-Private-Hop, x-other-hop",
  "x-private-hop": "for the gateway",
  "x-other-hop": "for the gateway too",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  "sec-websocket-version": "13",
  "sec-websocket-protocol": "chat"
}

/** A request body and its content type. */
type Body = readonly [contentType: string, bytes: Buffer]

/**
 * A POST with the hop-by-hop headers and `x-kept`; resolves with the status
 * and the headers exactly as the caller got them once the answer is read.
 */
const post = (path: string, [contentType, body]: Body, to: RunningGateway = gateway) =>
  new Promise<{ status: number; headers: Http.IncomingHttpHeaders }>((resolve, reject) => {
    const request = Http.request(
      `${to.url}${path}`,
      { method: "POST", headers: { ...HOP_BY_HOP, "x-kept": "yes", "content-type": contentType, "content-length": body.length } },
      (response) => {
        response.resume()
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers }))
      }
    )
    request.on("error", reject)
    request.end(body)
  })

const json = (value: unknown): Body => ["application/json", Buffer.from(JSON.stringify(value))]

const multipart = (parts: ReadonlyArray<{ name: string; value: string; filename?: string }>): Body => {
  const boundary = "hop-by-hop-boundary"
  const body = parts
    .map((part) =>
      `--${boundary}\r\ncontent-disposition: form-data; name="${part.name}"${part.filename === undefined ? "" : `; filename="${part.filename}"`}\r\n\r\n${part.value}\r\n`
    )
    .join("")
  return [`multipart/form-data; boundary=${boundary}`, Buffer.from(`${body}--${boundary}--\r\n`)]
}

/** The headers the upstream received, after the one request it got. */
const upstreamHeaders = (fake: FakeUpstream) => {
  expect(fake.requests).toHaveLength(1)
  return fake.requests[0].headers
}

const expectNoHopByHop = (headers: Record<string, unknown>) => {
  expect(headers).not.toHaveProperty("x-private-hop")
  expect(headers).not.toHaveProperty("x-other-hop")
  for (const name of Object.keys(headers)) expect(name).not.toMatch(/^sec-websocket-/)
}

const chat = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }

/** The same-format routes that go upstream, and the fake each reaches. */
const sameFormat = [
    { route: "chat completions", path: "/v1/chat/completions", body: json(chat), upstream: "openai" },
    { route: "messages", path: "/v1/messages", body: json({ model: "claude-e2e", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }), upstream: "anthropic" },
    { route: "responses", path: "/v1/responses", body: json({ model: "gpt-4o", input: "hi" }), upstream: "openai" },
    { route: "embeddings", path: "/v1/embeddings", body: json({ model: "text-embedding-3-small", input: "hi" }), upstream: "openai" },
    { route: "a native passthrough", path: "/v1/gemini/models/gemini-2.0-flash:generateContent", body: json({ contents: [] }), upstream: "gemini" },
    { route: "a file upload", path: "/v1/files", body: multipart([{ name: "purpose", value: "batch" }, { name: "file", value: "{}", filename: "a.jsonl" }]), upstream: "openai" },
    { route: "a transcription form", path: "/v1/audio/transcriptions", body: multipart([{ name: "file", value: "RIFF", filename: "a.wav" }, { name: "model", value: "whisper-1" }]), upstream: "openai" }
] as const

describe("headers the caller's Connection names, and sec-websocket-*, never go upstream", () => {
  for (const { route, path, body, upstream } of sameFormat) {
    it(`on ${route}, while the caller's other headers pass`, async () => {
      // The generic fake knows no Gemini paths: it answers what it is told.
      if (upstream === "gemini") fakes.gemini.script({ kind: "json", body: { candidates: [] } })
      expect((await post(path, body)).status).toBe(200)
      const headers = upstreamHeaders(fakes[upstream])
      expectNoHopByHop(headers)
      expect(headers["x-kept"]).toBe("yes")
    })
  }

  it("on chat translated to another wire family", async () => {
    expect((await post("/v1/chat/completions", json({ ...chat, model: "claude-e2e" }))).status).toBe(200)
    expectNoHopByHop(upstreamHeaders(fakes.anthropic))
  })
})

/**
 * Hop-by-hop headers of an upstream's answer, and an ordinary one it means for
 * the caller. `Connection` comes as two header lines, which a client may
 * hand over as a list.
 */
const UPSTREAM_HEADERS = {
  connection: ["keep-alive, X-Upstream-Secret", "x-second-secret"],
  "x-upstream-secret": "for the gateway alone",
  "x-second-secret": "for the gateway too",
  upgrade: "h2c",
  trailer: "x-checksum",
  "proxy-authenticate": 'Basic realm="upstream"',
  "proxy-connection": "keep-alive",
  te: "trailers",
  "x-ratelimit-remaining-requests": "42"
}

/**
 * A front for a fake upstream that adds `UPSTREAM_HEADERS` to each of its
 * answers, body and status unchanged. The body goes chunked (no
 * `content-length`), as a body announcing a `trailer` must.
 */
const addingUpstreamHeaders = (target: string) =>
  new Promise<Http.Server>((resolve) => {
    const server = Http.createServer((req, res) => {
      const { connection: _connection, ...headers } = req.headers
      const forward = Http.request(`${target}${req.url}`, { method: req.method, headers }, (answer) => {
        const { connection: _c, "keep-alive": _k, "content-length": _l, "transfer-encoding": _t, ...kept } = answer.headers
        res.writeHead(answer.statusCode ?? 502, { ...kept, ...UPSTREAM_HEADERS })
        answer.pipe(res)
      })
      forward.on("error", () => res.destroy())
      req.pipe(forward)
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })

describe("headers the upstream's Connection names, upgrade, trailer, proxy-* and te never reach the caller", () => {
  const fronts: Array<Http.Server> = []
  afterAll(() => Promise.all(fronts.map((front) => new Promise((resolve) => front.close(resolve)))))
  const fronted = async (fake: FakeUpstream) => {
    const front = await addingUpstreamHeaders(fake.url)
    fronts.push(front)
    return `http://127.0.0.1:${(front.address() as AddressInfo).port}`
  }
  const viaFronts = gatewayWithFakes(
    { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, gemini: { kind: "generic" } },
    async (fakes) => ({
      providers: {
        openai: { base_url: `${await fronted(fakes.openai)}/v1`, models: ["gpt-4o", "text-embedding-3-small", "whisper-1"], credential: "none" },
        anthropic: { base_url: await fronted(fakes.anthropic), models: ["claude-e2e"], credential: "none" },
        gemini: { base_url: `${await fronted(fakes.gemini)}/v1beta`, credential: "none" }
      }
    })
  )

  const expectOnlyOrdinary = (headers: Http.IncomingHttpHeaders) => {
    for (const name of ["x-upstream-secret", "x-second-secret", "upgrade", "trailer", "proxy-authenticate", "proxy-connection", "te"]) expect(headers).not.toHaveProperty(name)
    expect(String(headers.connection)).not.toMatch(/secret/i)
    expect(headers["x-ratelimit-remaining-requests"]).toBe("42")
  }

  const routes = [
    ...sameFormat,
    { route: "a streamed chat", path: "/v1/chat/completions", body: json({ ...chat, stream: true }), upstream: "openai" },
    { route: "chat translated to another wire family", path: "/v1/chat/completions", body: json({ ...chat, model: "claude-e2e" }), upstream: "anthropic" },
    { route: "a streamed chat translated to another wire family", path: "/v1/chat/completions", body: json({ ...chat, model: "claude-e2e", stream: true }), upstream: "anthropic" }
  ] as const
  for (const { route, path, body, upstream } of routes) {
    it(`on ${route}, while its other headers pass`, async () => {
      if (upstream === "gemini") viaFronts.fakes.gemini.script({ kind: "json", body: { candidates: [] } })
      const answer = await post(path, body, viaFronts.gateway)
      expect(answer.status).toBe(200)
      expectOnlyOrdinary(answer.headers)
    })
  }
})
