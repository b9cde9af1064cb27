/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) on every route that goes upstream:
 * the headers a caller's `Connection` header names, and the WebSocket
 * handshake's `sec-websocket-*`, are for the gateway alone; any other header
 * of the caller still passes on the same-format routes. Sent with `node:http`
 * because `fetch` refuses to send `Connection` and `Sec-*` headers at all.
 */
import * as Http from "node:http"
import { describe, expect, it } from "vitest"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

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

/** A POST with the hop-by-hop headers and `x-kept`; resolves with the status once the answer is read. */
const post = (path: string, [contentType, body]: Body) =>
  new Promise<number>((resolve, reject) => {
    const request = Http.request(
      `${gateway.url}${path}`,
      { method: "POST", headers: { ...HOP_BY_HOP, "x-kept": "yes", "content-type": contentType, "content-length": body.length } },
      (response) => {
        response.resume()
        response.on("end", () => resolve(response.statusCode ?? 0))
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

describe("headers the caller's Connection names, and sec-websocket-*, never go upstream", () => {
  const sameFormat = [
    { route: "chat completions", path: "/v1/chat/completions", body: json(chat), upstream: "openai" },
    { route: "messages", path: "/v1/messages", body: json({ model: "claude-e2e", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }), upstream: "anthropic" },
    { route: "responses", path: "/v1/responses", body: json({ model: "gpt-4o", input: "hi" }), upstream: "openai" },
    { route: "embeddings", path: "/v1/embeddings", body: json({ model: "text-embedding-3-small", input: "hi" }), upstream: "openai" },
    { route: "a native passthrough", path: "/v1/gemini/models/gemini-2.0-flash:generateContent", body: json({ contents: [] }), upstream: "gemini" },
    { route: "a file upload", path: "/v1/files", body: multipart([{ name: "purpose", value: "batch" }, { name: "file", value: "{}", filename: "a.jsonl" }]), upstream: "openai" },
    { route: "a transcription form", path: "/v1/audio/transcriptions", body: multipart([{ name: "file", value: "RIFF", filename: "a.wav" }, { name: "model", value: "whisper-1" }]), upstream: "openai" }
  ] as const
  for (const { route, path, body, upstream } of sameFormat) {
    it(`on ${route}, while the caller's other headers pass`, async () => {
      // The generic fake knows no Gemini paths: it answers what it is told.
      if (upstream === "gemini") fakes.gemini.script({ kind: "json", body: { candidates: [] } })
      expect(await post(path, body)).toBe(200)
      const headers = upstreamHeaders(fakes[upstream])
      expectNoHopByHop(headers)
      expect(headers["x-kept"]).toBe("yes")
    })
  }

  it("on chat translated to another wire family", async () => {
    expect(await post("/v1/chat/completions", json({ ...chat, model: "claude-e2e" }))).toBe(200)
    expectNoHopByHop(upstreamHeaders(fakes.anthropic))
  })
})
