/**
 * What real clients found (issue "Fidelity fixes"): output limits for OpenAI's
 * reasoning models, Anthropic native structured output, one commit rule on both
 * paths, one owner per upstream body, Retry-After in every form, compressed
 * upstream bodies, and in-band errors in the caller's own format. The fake
 * upstreams reject what the real providers reject (`max_tokens` on o-series
 * models, unknown fields, unpaired tool ids).
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { gzipSync } from "node:zlib"
import { beforeAll, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicStartMessage, anthropicStreamError, openAiChunk, openAiStreamError } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, compat: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "o4-mini", "text-embedding-3-small"], credential: "none" },
      compat: { kind: "openai", base_url: `${fakes.compat.url}/v1`, models: ["llama"], credential: "none" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "none" }
    },
    targets: { claude: { model: "claude-e2e" }, gpt: { model: "gpt-4o" }, llama: { model: "llama" } },
    routes: {
      claude_then_gpt: { endpoint: "chat", models: ["claude-then-gpt"], strategy: "fallback", targets: ["claude", "gpt"], retry: { max_retries: 0 } },
      gpt_then_llama: { endpoint: "chat", models: ["gpt-then-llama"], strategy: "fallback", targets: ["gpt", "llama"], retry: { max_retries: 0 } },
      many_retries: { endpoint: "chat", models: ["many-retries"], strategy: "single", targets: ["gpt"], retry: { max_retries: 12, backoff_base_ms: 0 } },
      one_retry: { endpoint: "chat", models: ["one-retry"], strategy: "single", targets: ["gpt"], retry: { max_retries: 1, backoff_base_ms: 0 } }
    },
    // Plain model names answer the first failure to the caller; the routes above retry.
    routing: { retry: { max_retries: 0 } }
  })
)
let openai: OpenAI
let anthropic: Anthropic

beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
})

describe("output limits of OpenAI reasoning models", () => {
  it("an Anthropic client's max_tokens reaches o4-mini as max_completion_tokens", async () => {
    const message = await anthropic.messages.create({ model: "o4-mini", max_tokens: 300, messages: [{ role: "user", content: "think" }] })
    expect(message.content[0]).toMatchObject({ type: "text", text: "echo: think" })
    expect(fakes.openai.requests[0].json).toMatchObject({ max_completion_tokens: 300 })
    expect((fakes.openai.requests[0].json as Record<string, unknown>).max_tokens).toBeUndefined()
  })

  it("streamed too, read by the Anthropic SDK's stream helper", async () => {
    const final = await anthropic.messages.stream({ model: "o4-mini", max_tokens: 300, messages: [{ role: "user", content: "stream think" }] }).finalMessage()
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: stream think" })
  })

  it("a Responses request's max_output_tokens reaches Chat Completions as max_completion_tokens for OpenAI, max_tokens for a compatible server", async () => {
    await anthropic.messages.create({ model: "llama", max_tokens: 99, messages: [{ role: "user", content: "x" }] })
    expect(fakes.compat.requests[0].json).toMatchObject({ max_tokens: 99 })
  })
})

describe("Anthropic native structured output", () => {
  const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"], additionalProperties: false }

  it("output_config.format reaches an OpenAI model as response_format json_schema, nothing dropped", async () => {
    const { response } = await anthropic.messages.create({
      model: "gpt-4o",
      max_tokens: 100,
      messages: [{ role: "user", content: "json please" }],
      output_config: { format: { type: "json_schema", schema } }
    } as Anthropic.MessageCreateParamsNonStreaming).withResponse()
    expect(response.headers.get("x-gw-dropped-params")).toBeNull()
    expect(fakes.openai.requests[0].json).toMatchObject({
      response_format: { type: "json_schema", json_schema: { name: "output", schema, strict: true } }
    })
  })

  it("to an Anthropic model it goes through untouched, even from a route that may fall back to OpenAI", async () => {
    await anthropic.messages.create({
      model: "claude-then-gpt",
      max_tokens: 100,
      messages: [{ role: "user", content: "json please" }],
      output_config: { format: { type: "json_schema", schema } }
    } as Anthropic.MessageCreateParamsNonStreaming)
    expect(fakes.anthropic.requests[0].json).toMatchObject({ output_config: { format: { type: "json_schema", schema } } })
  })
})

describe("one commit rule on both paths", () => {
  const opening = anthropicEvent("message_start", { message: anthropicStartMessage({ id: "msg_open", model: "claude-e2e", blocks: [] }) })

  it("an Anthropic caller on the same-format path: message_start then overloaded_error is retried on the next target", async () => {
    fakes.anthropic.script({ kind: "sse", events: [opening, anthropicStreamError("overloaded_error", "Overloaded")] })
    const final = await anthropic.messages.stream({ model: "claude-then-gpt", max_tokens: 50, messages: [{ role: "user", content: "go on" }] }).finalMessage()
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: go on" })
    expect(fakes.openai.requests.length).toBe(1)
    const logs = await waitForRequestLogs(gateway, 1)
    expect(logs.at(-1)).toMatchObject({ provider: "openai", attempts: 2, status: 200 })
  })

  it("an OpenAI caller on the same-format path: the role chunk then an error is retried", async () => {
    fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" }), openAiStreamError()] })
    const stream = await openai.chat.completions.create({ model: "gpt-then-llama", stream: true, messages: [{ role: "user", content: "again" }] })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("echo: again")
    expect(fakes.compat.requests.length).toBe(1)
  })

  it("an opening that ends without content (a dropped connection) is retried", async () => {
    fakes.anthropic.script({ kind: "sse", events: [opening], thenError: "close" })
    const final = await anthropic.messages.stream({ model: "claude-then-gpt", max_tokens: 50, messages: [{ role: "user", content: "dropped" }] }).finalMessage()
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: dropped" })
  })
})

describe("one owner per upstream body", () => {
  it("a dozen retried attempts leave no listeners behind on the caller's socket", async () => {
    const warnings: Array<string> = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on("warning", onWarning)
    try {
      fakes.openai.script({ kind: "error", status: 503, times: 12 })
      const response = await openai.chat.completions.create({ model: "many-retries", messages: [{ role: "user", content: "persist" }] })
      expect(response.choices[0].message.content).toBe("echo: persist")
      expect(fakes.openai.requests.length).toBe(13)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(warnings).not.toContain("MaxListenersExceededWarning")
    } finally {
      process.off("warning", onWarning)
    }
  })

  it("a caller gone right after the upstream's head: the upstream connection is closed", async () => {
    fakes.openai.script({ kind: "slowStream", chunks: 50, intervalMs: 50 })
    const controller = new AbortController()
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "x" }] }),
      signal: controller.signal
    })
    expect(response.status).toBe(200)
    controller.abort()
    await fakes.openai.waitForClosedEarly(1)
  })
})

describe("Retry-After in every form", () => {
  const rateLimited = (headers: Record<string, string>) => ({ kind: "error" as const, status: 429, headers })

  it("fractional seconds are honoured and re-emitted as whole seconds (rounded up) and milliseconds", async () => {
    fakes.openai.script(rateLimited({ "retry-after": "1.5" }))
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
    })
    expect(response.status).toBe(429)
    expect(response.headers.get("retry-after")).toBe("2")
    expect(response.headers.get("retry-after-ms")).toBe("1500")
  })

  it("retry-after-ms sets the wait before the retry", async () => {
    fakes.openai.script(rateLimited({ "retry-after-ms": "300" }))
    const response = await openai.chat.completions.create({ model: "one-retry", messages: [{ role: "user", content: "wait" }] })
    expect(response.choices[0].message.content).toBe("echo: wait")
    const [first, second] = fakes.openai.requests
    expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(280)
  })

  it("an HTTP date is read as a date; one already past is no hint at all, never a synthesized 0", async () => {
    const future = new Date(Date.now() + 5_000).toUTCString()
    fakes.openai.script(rateLimited({ "retry-after": future }), rateLimited({ "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }))
    const post = () =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
      })
    const ahead = Number((await post()).headers.get("retry-after"))
    expect(ahead).toBeGreaterThanOrEqual(4)
    expect(ahead).toBeLessThanOrEqual(6)
    expect((await post()).headers.get("retry-after")).toBeNull()
  })
})

describe("compressed upstream bodies", () => {
  const gzipJson = (status: number, value: unknown, type = "application/json") => ({
    kind: "custom" as const,
    handle: ({ res }: { res: import("node:http").ServerResponse }) => {
      const body = gzipSync(JSON.stringify(value))
      res.writeHead(status, { "content-type": type, "content-encoding": "gzip", "content-length": String(body.length) })
      res.end(body)
    }
  })
  const completion = { id: "chatcmpl-gz", object: "chat.completion", created: 1, model: "gpt-4o", choices: [{ index: 0, message: { role: "assistant", content: "zipped hello" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }

  it("the same-format path decodes it: the SDK reads the answer, the log has its usage", async () => {
    fakes.openai.script(gzipJson(200, completion))
    const response = await openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
    expect(response.choices[0].message.content).toBe("zipped hello")
    const logs = await waitForRequestLogs(gateway, 1)
    expect(logs.at(-1)).toMatchObject({ output_tokens: 2 })
  })

  it("the translated path decodes it", async () => {
    fakes.openai.script(gzipJson(200, completion))
    const message = await anthropic.messages.create({ model: "gpt-4o", max_tokens: 10, messages: [{ role: "user", content: "x" }] })
    expect(message.content[0]).toMatchObject({ type: "text", text: "zipped hello" })
  })

  it("a compressed error body is read for its classification and message", async () => {
    fakes.openai.script(gzipJson(429, { error: { message: "quota gone", type: "insufficient_quota", code: "insufficient_quota" } }))
    const error = await anthropic.messages.create({ model: "gpt-4o", max_tokens: 10, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 429, error: { error: { message: "quota gone" } } })
    expect((error as { headers: Headers }).headers.get("x-gw-error-code")).toBe("quota")
  })

  it("a verbatim endpoint forwards the bytes with their content-encoding", async () => {
    fakes.openai.script(gzipJson(200, { object: "list", data: [{ object: "embedding", index: 0, embedding: [0.5] }], model: "text-embedding-3-small" }))
    const response = await fetch(`${gateway.url}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json", "accept-encoding": "gzip" },
      body: JSON.stringify({ model: "text-embedding-3-small", input: "x" })
    })
    expect(response.headers.get("content-encoding")).toBe("gzip")
    expect(await response.json()).toMatchObject({ data: [{ embedding: [0.5] }] })
  })
})

describe("in-band errors before content, in the caller's own format", () => {
  it("a Responses caller translated to Chat Completions gets an OpenAI-shaped error, not Anthropic's", async () => {
    fakes.compat.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" }), openAiStreamError("slow down", "requests", "rate_limit_exceeded")] })
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "llama", input: "x", stream: true })
    })
    expect(response.status).toBe(429)
    expect(response.headers.get("x-gw-error-code")).toBe("rate_limit")
    const body = await response.json() as Record<string, unknown>
    expect(body.type).toBeUndefined()
    expect(body).toMatchObject({ error: { message: "slow down", code: "rate_limit_exceeded" } })
  })

  it("a stream error keeps its upstream code, so content_policy_violation is classified exactly", async () => {
    fakes.openai.script({
      kind: "sse",
      events: [openAiChunk({ role: "assistant", content: "" }), openAiStreamError("flagged by the safety system", "invalid_request_error", "content_policy_violation")]
    })
    const error = await anthropic.messages.create({ model: "gpt-4o", max_tokens: 10, stream: true, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 400 })
    expect((error as { headers: Headers }).headers.get("x-gw-error-code")).toBe("content_policy")
  })
})
