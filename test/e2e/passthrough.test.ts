/**
 * Native passthrough `/v1/{bedrock,vertex,cohere,gemini}/*` (docs/reference/gateway-spec.md §7.3.5):
 * method, path rest, query and body forwarded byte for byte with the
 * provider's credential in its own auth form; responses, success and error,
 * returned byte for byte with the upstream status and content type.
 */
import { createHash, randomBytes } from "node:crypto"
import * as Http from "node:http"
import { Readable } from "node:stream"
import { describe, expect, it } from "vitest"
import { sseData } from "../fixtures/fake-upstream.ts"
import type { ScriptContext } from "../fixtures/fake-upstream.ts"
import { closedPort } from "../fixtures/otlp-receiver.ts"
import { gatewayWithFakes } from "./harness.ts"

type Json = Record<string, any>

/** Answers with exactly these bytes, status and headers. */
const answer = (status: number, headers: Record<string, string>, body: string | Buffer) => ({
  kind: "custom" as const,
  handle: ({ res }: ScriptContext) => {
    res.writeHead(status, headers)
    res.end(body)
  }
})

const { fakes, gateway } = gatewayWithFakes(
  { gemini: { kind: "generic" }, bedrock: { kind: "generic" }, cohere: { kind: "cohere" } },
  async (fakes) => ({
    providers: {
      gemini: { base_url: `${fakes.gemini.url}/v1beta`, credential: "env::GEMINI_KEY" },
      "gemini-down": { kind: "gemini", base_url: `http://127.0.0.1:${await closedPort()}`, credential: "env::GEMINI_KEY" },
      bedrock: { base_url: fakes.bedrock.url, credential: "env::BEDROCK_TOKEN" },
      cohere: { base_url: fakes.cohere.url, models: ["rerank-v3.5"], credential: "none" }
    }
  }),
  { GEMINI_KEY: "gemini-config-key", BEDROCK_TOKEN: "bedrock-config-token" }
)

describe("passthrough", () => {
  it("forwards method, path rest, query and body byte for byte and answers with the upstream bytes", async () => {
    const upstreamBody = '{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],  "usageMetadata":{"totalTokenCount":3}}\n'
    fakes.gemini.script(answer(200, { "content-type": "application/json; charset=UTF-8", "x-goog-trace": "t1" }, upstreamBody))
    const requestBody = '{"contents":[{"parts":[{"text":"hello"}]}] , "odd":  "spacing"}'
    const response = await fetch(`${gateway.url}/v1/gemini/models/gemini-2.0-flash:generateContent?foo=bar%20baz&x=1+2`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-goog-api-key": "caller-goog-key",
        authorization: "Bearer caller-bearer",
        "x-api-key": "caller-x-api-key",
        "x-gw-project-id": "project-1",
        "x-gw-authorization": "Bearer platform-key",
        "x-genai-sdk": "openai",
        "x-custom-header": "kept"
      },
      body: requestBody
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("application/json; charset=UTF-8")
    expect(response.headers.get("x-goog-trace")).toBe("t1")
    expect(await response.text()).toBe(upstreamBody)

    const seen = fakes.gemini.requests[0]
    expect(seen.method).toBe("POST")
    expect(seen.path).toBe("/v1beta/models/gemini-2.0-flash:generateContent?foo=bar%20baz&x=1+2")
    expect(seen.body.toString()).toBe(requestBody)
    // The provider's credential in its auth form; the caller's credentials and the gateway's headers stay behind.
    expect(seen.headers["x-goog-api-key"]).toBe("gemini-config-key")
    expect(seen.headers).not.toHaveProperty("authorization")
    expect(seen.headers).not.toHaveProperty("x-api-key")
    for (const name of Object.keys(seen.headers)) expect(name).not.toMatch(/^x-(gw|genai)-/)
    expect(seen.headers["x-custom-header"]).toBe("kept")
    expect(seen.headers["content-type"]).toBe("application/json")
  })

  it("drops a credential passed in Gemini's ?key= query parameter and keeps the rest of the query", async () => {
    fakes.gemini.script(answer(200, { "content-type": "application/json" }, "{}"))
    await fetch(`${gateway.url}/v1/gemini/models?pageSize=5&key=caller-key&pageToken=abc`)
    expect(fakes.gemini.requests[0].path).toBe("/v1beta/models?pageSize=5&pageToken=abc")
    expect(fakes.gemini.requests[0].method).toBe("GET")
  })

  it("streams an SSE response through byte for byte", async () => {
    const events = [sseData({ candidates: [{ content: { parts: [{ text: "Hel" }] } }] }), sseData({ candidates: [{ content: { parts: [{ text: "lo" }] } }] })]
    fakes.gemini.script({ kind: "sse", events, delayMs: 5 })
    const response = await fetch(`${gateway.url}/v1/gemini/models/gemini-2.0-flash:streamGenerateContent?alt=sse`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}"
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(await response.text()).toBe(events.join(""))
    expect(fakes.gemini.requests[0].path).toBe("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse")
  })

  it("returns an upstream JSON error byte for byte with its status and the classification headers", async () => {
    const errorBody = '{\n  "error": {\n    "code": 429,\n    "message": "Resource has been exhausted",\n    "status": "RESOURCE_EXHAUSTED"\n  }\n}\n'
    fakes.gemini.script(answer(429, { "content-type": "application/json; charset=UTF-8", "retry-after": "7" }, errorBody))
    const response = await fetch(`${gateway.url}/v1/gemini/models/x:generateContent`, { method: "POST", body: "{}" })
    expect(response.status).toBe(429)
    expect(response.headers.get("content-type")).toBe("application/json; charset=UTF-8")
    expect(response.headers.get("x-gw-error-code")).toBe("rate_limit")
    expect(response.headers.get("x-gw-upstream-provider")).toBe("gemini")
    expect(response.headers.get("retry-after")).toBe("7")
    expect(await response.text()).toBe(errorBody)
  })

  it("returns an error body larger than 64 KB whole, byte for byte, classified from its start", async () => {
    const errorBody = JSON.stringify({ error: { code: 400, message: "bad request", status: "INVALID_ARGUMENT", details: "d".repeat(300 * 1024) } })
    fakes.gemini.script(answer(400, { "content-type": "application/json" }, errorBody))
    const response = await fetch(`${gateway.url}/v1/gemini/models/x:generateContent`, { method: "POST", body: "{}" })
    expect(response.status).toBe(400)
    expect(response.headers.get("x-gw-error-code")).toBe("bad_request")
    const text = await response.text()
    expect(text.length).toBe(errorBody.length)
    expect(text).toBe(errorBody)
  })

  it("returns an upstream 5xx with a non-JSON body as it came (no redaction on passthrough)", async () => {
    fakes.bedrock.script(answer(503, { "content-type": "text/plain" }, "service unavailable, try later"))
    const response = await fetch(`${gateway.url}/v1/bedrock/model/m/invoke`, { method: "POST", body: "{}" })
    expect(response.status).toBe(503)
    expect(response.headers.get("content-type")).toBe("text/plain")
    expect(response.headers.get("x-gw-error-code")).toBe("upstream")
    expect(response.headers.get("x-gw-upstream-provider")).toBe("bedrock")
    expect(await response.text()).toBe("service unavailable, try later")
  })

  it("sends Bedrock the bearer API key and keeps escaped characters of the model id in the path", async () => {
    fakes.bedrock.script(answer(200, { "content-type": "application/json" }, '{"output":{"message":{}}}'))
    const path = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.anthropic.claude/converse"
    const response = await fetch(`${gateway.url}/v1/bedrock${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "AWS4-HMAC-SHA256 Credential=caller", "x-amz-security-token": "caller-session" },
      body: '{"messages":[]}'
    })
    expect(response.status).toBe(200)
    const seen = fakes.bedrock.requests[0]
    expect(seen.path).toBe(path)
    expect(seen.headers.authorization).toBe("Bearer bedrock-config-token")
    expect(seen.headers).not.toHaveProperty("x-amz-security-token")
  })

  it("streams a large request body upstream intact", async () => {
    fakes.bedrock.script(answer(200, { "content-type": "application/json" }, "{}"))
    const chunks = Array.from({ length: 80 }, () => randomBytes(64 * 1024))
    const hash = createHash("sha256")
    for (const chunk of chunks) hash.update(chunk)
    const response = await new Promise<Http.IncomingMessage>((resolve, reject) => {
      const request = Http.request(`${gateway.url}/v1/bedrock/model/m/invoke`, { method: "PUT", headers: { "content-type": "application/octet-stream" } }, resolve)
      request.on("error", reject)
      Readable.from(chunks).pipe(request)
    })
    response.resume()
    expect(response.statusCode).toBe(200)
    const seen = fakes.bedrock.requests[0]
    expect(seen.method).toBe("PUT")
    expect(seen.bodySize).toBe(80 * 64 * 1024)
    expect(seen.bodySha256).toBe(hash.digest("hex"))
  })

  it("uses the caller's own key for a provider configured without a credential", async () => {
    const response = await fetch(`${gateway.url}/v1/cohere/v2/rerank`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer caller-cohere-key" },
      body: JSON.stringify({ model: "rerank-v3.5", query: "capital", documents: ["Paris is the capital", "bread"] })
    })
    expect(response.status).toBe(200)
    const body = (await response.json()) as Json
    expect(body.results[0].index).toBe(0)
    expect(fakes.cohere.requests[0].path).toBe("/v2/rerank")
    expect(fakes.cohere.requests[0].headers.authorization).toBe("Bearer caller-cohere-key")
  })

  it("picks among providers of a kind with x-genai-provider and answers 502 when the upstream is unreachable", async () => {
    const response = await fetch(`${gateway.url}/v1/gemini/models`, { headers: { "x-genai-provider": "gemini-down" } })
    expect(response.status).toBe(502)
    expect(response.headers.get("x-gw-error-code")).toBe("upstream")
    expect(((await response.json()) as Json).error).toMatchObject({ type: "api_error", code: "upstream_error" })
  })

  it("rejects a path rest with dot segments that could leave the base URL's path", async () => {
    for (const rest of ["../admin", "models/%2E%2E/%2e%2e/admin", "./models"]) {
      const response = await new Promise<Http.IncomingMessage>((resolve, reject) => {
        // A raw path: a URL string would have its dot segments normalized away before sending.
        Http.get({ host: "127.0.0.1", port: gateway.port, path: `/v1/gemini/${rest}` }, resolve).on("error", reject)
      })
      response.resume()
      expect(response.statusCode).toBe(400)
    }
    expect(fakes.gemini.requests).toHaveLength(0)
  })

  it("answers 404 naming the missing provider for a passthrough kind that is not configured", async () => {
    const response = await fetch(`${gateway.url}/v1/vertex/projects/p/locations/l/publishers/google/models/m:generateContent`, { method: "POST", body: "{}" })
    expect(response.status).toBe(404)
    const body = (await response.json()) as Json
    expect(body.error.code).toBe("not_found")
    expect(body.error.message).toMatch(/no vertex provider is configured/)
    expect(response.headers.get("x-gw-error-code")).toBeNull()
  })

  it("answers 404 for a provider kind without passthrough support", async () => {
    const response = await fetch(`${gateway.url}/v1/openai/chat/completions`, { method: "POST", body: "{}" })
    expect(response.status).toBe(404)
    const anthropic = await fetch(`${gateway.url}/v1/anthropic/v1/messages`, { method: "POST", body: "{}" })
    expect(anthropic.status).toBe(404)
  })
})
