/**
 * Guardrails end to end with the official SDKs: every scanned surface refuses
 * PII and blocklisted terms with a 400 in the caller's format that names the
 * category and never the text, and nothing reaches the provider; the surfaces
 * that are not scanned reach it byte for byte; output guardrails withhold a
 * violating answer (422) and record a violating stream without touching it.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

const EMAIL = "alice.secret@example.com"
const TERM = "Project Nightingale"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, cohere: { kind: "cohere" }, gemini: { kind: "generic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "text-embedding-3-small", "gpt-image-1", "tts-1", "whisper-1"], credential: "none" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "none" },
      cohere: { base_url: fakes.cohere.url, models: ["rerank-v3.5"], credential: "none" },
      gemini: { base_url: fakes.gemini.url, credential: "none" }
    },
    security: { enabled: true, blocklist: [TERM, "zanzibar"], output_guardrails: true },
    routing: { retry: { max_retries: 0 } }
  })
)
let openai: OpenAI
let anthropic: Anthropic

beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0 })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0 })
})

const upstreamCount = () => fakes.openai.requests.length + fakes.anthropic.requests.length + fakes.cohere.requests.length + fakes.gemini.requests.length

interface Refusal {
  readonly status: number
  readonly body: string
  readonly json: Record<string, any>
}

const refusalOf = async (promise: Promise<unknown>): Promise<Refusal> => {
  const error = await promise.then(() => undefined, (e: unknown) => e) as { status: number; error: Record<string, any> } | undefined
  if (error === undefined) throw new Error("the request was not refused")
  return { status: error.status, body: JSON.stringify(error.error), json: error.error }
}

const expectOpenAiRefusal = (refusal: Refusal, code: string, category: string) => {
  expect(refusal.status).toBe(400)
  expect(refusal.json).toMatchObject({ code, type: "invalid_request_error" })
  expect(refusal.json.message).toContain(category)
  expect(refusal.body).not.toContain(EMAIL)
  expect(refusal.body.toLowerCase()).not.toContain(TERM.toLowerCase())
  expect(upstreamCount()).toBe(0)
}

describe("input guardrails on every scanned surface", () => {
  it("chat completions: an email in a user message, a term in the system prompt", async () => {
    expectOpenAiRefusal(await refusalOf(openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: `mail ${EMAIL}` }] })), "pii_detected", "an email address")
    expectOpenAiRefusal(
      await refusalOf(openai.chat.completions.create({ model: "claude-e2e", messages: [{ role: "system", content: `about ${TERM.toUpperCase()}` }, { role: "user", content: "hi" }] })),
      "blocklist_match",
      "a blocklisted term"
    )
  })

  it("chat completions: a tool result carrying a card number", async () => {
    expectOpenAiRefusal(await refusalOf(openai.chat.completions.create({
      model: "gpt-4o",
      messages: [
        { role: "user", content: "look it up" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "card on file: 4111 1111 1111 1111" }
      ]
    })), "pii_detected", "a payment card number")
  })

  it("a streaming request is refused with a plain JSON 400 before any stream starts", async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: `ssn 123-45-6789` }] })
    })
    expect(response.status).toBe(400)
    expect(response.headers.get("content-type")).toBe("application/json")
    expect(await response.json()).toMatchObject({ error: { code: "pii_detected" } })
    expect(upstreamCount()).toBe(0)
  })

  it("messages: system blocks, text and tool results, answered in the Anthropic envelope", async () => {
    for (const request of [
      { system: [{ type: "text" as const, text: `call me at +1 (415) 555-0132` }], messages: [{ role: "user" as const, content: "hi" }] },
      { messages: [{ role: "user" as const, content: [{ type: "text" as const, text: `zanzibar plans` }] }] },
      {
        messages: [
          { role: "user" as const, content: "go" },
          { role: "assistant" as const, content: [{ type: "tool_use" as const, id: "t1", name: "f", input: {} }] },
          { role: "user" as const, content: [{ type: "tool_result" as const, tool_use_id: "t1", content: `IBAN GB82WEST12345698765432` }] }
        ]
      }
    ]) {
      const refusal = await refusalOf(anthropic.messages.create({ model: "gpt-4o", max_tokens: 10, ...request }))
      expect(refusal.status).toBe(400)
      expect(refusal.json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } })
      expect(["pii_detected", "blocklist_match"]).toContain(refusal.json.error.code)
      expect(refusal.body).not.toContain("555-0132")
      expect(refusal.body).not.toContain("GB82")
    }
    expect(upstreamCount()).toBe(0)
  })

  it("responses: instructions and input items", async () => {
    expectOpenAiRefusal(await refusalOf(openai.responses.create({ model: "gpt-4o", instructions: `reply to ${EMAIL}`, input: "hi" })), "pii_detected", "an email address")
    expectOpenAiRefusal(
      await refusalOf(openai.responses.create({ model: "claude-e2e", input: [{ role: "user", content: [{ type: "input_text", text: "server 10.1.2.3 is down" }] }] })),
      "pii_detected",
      "an IPv4 address"
    )
  })

  it("embeddings, images, speech, rerank and count_tokens", async () => {
    expectOpenAiRefusal(await refusalOf(openai.embeddings.create({ model: "text-embedding-3-small", input: ["fine", `key AKIAIOSFODNN7EXAMPLE`] })), "pii_detected", "a secret key")
    expectOpenAiRefusal(await refusalOf(openai.images.generate({ model: "gpt-image-1", prompt: `a poster for ${TERM}` })), "blocklist_match", "a blocklisted term")
    expectOpenAiRefusal(await refusalOf(openai.audio.speech.create({ model: "tts-1", voice: "alloy", input: `write to ${EMAIL}` })), "pii_detected", "an email address")
    const rerank = await fetch(`${gateway.url}/v1/rerank`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "rerank-v3.5", query: "q", documents: ["a", `ssn 078-05-1120`] })
    })
    expect(rerank.status).toBe(400)
    expect(await rerank.text()).not.toContain("078-05-1120")
    const counted = await refusalOf(anthropic.messages.countTokens({ model: "claude-e2e", messages: [{ role: "user", content: `zanzibar` }] }))
    expect(counted).toMatchObject({ status: 400, json: { type: "error", error: { code: "blocklist_match" } } })
    expect(upstreamCount()).toBe(0)
  })

  it("the request log line records the category, never the text", async () => {
    await refusalOf(openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: `mail ${EMAIL}` }] }))
    const line = (await waitForRequestLogs(gateway, 1)).at(-1)!
    expect(line).toMatchObject({ status: 400, guardrail: "email", error_code: "pii_detected" })
    expect(JSON.stringify(gateway.logs)).not.toContain(EMAIL)
  })
})

describe("what is not scanned reaches the provider byte for byte", () => {
  it("transcription audio, file uploads and native passthrough bodies", async () => {
    const audio = Buffer.from(`spoken: ${EMAIL}`)
    await openai.audio.transcriptions.create({ model: "whisper-1", file: await toFile(audio, "a.wav") })
    const upload = Buffer.from(`{"note":"${TERM}"}\n`)
    await openai.files.create({ file: await toFile(upload, "batch.jsonl"), purpose: "batch" })
    const native = JSON.stringify({ contents: [{ parts: [{ text: `mail ${EMAIL}` }] }] })
    const response = await fetch(`${gateway.url}/v1/gemini/models/x:generateContent`, { method: "POST", headers: { "content-type": "application/json" }, body: native })
    expect(response.status).not.toBe(400)
    expect(fakes.openai.requests.some((request) => request.multipart?.files.some((file) => file.content?.equals(audio)))).toBe(true)
    expect(fakes.openai.requests.some((request) => request.multipart?.files.some((file) => file.content?.equals(upload)))).toBe(true)
    expect(fakes.gemini.requests[0].body.toString("utf8")).toBe(native)
  })
})

describe("output guardrails", () => {
  it("a non-streamed answer holding PII is withheld: 422, nothing of it in the body, usage logged", async () => {
    fakes.openai.script({ kind: "reply", text: `Sure, write to ${EMAIL} for access.` })
    const refusal = await refusalOf(openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "who do I ask?" }] }))
    expect(refusal.status).toBe(422)
    expect(refusal.json).toMatchObject({ code: "output_guardrail_violation" })
    expect(refusal.json.message).toContain("an email address")
    expect(refusal.body).not.toContain(EMAIL)
    expect(refusal.body).not.toContain("Sure")
    const line = (await waitForRequestLogs(gateway, 1)).at(-1)!
    expect(line).toMatchObject({ status: 422, guardrail_output: "email" })
    expect(line.output_tokens).toBeGreaterThan(0)
  })

  it("the same through translation, to an Anthropic caller", async () => {
    fakes.openai.script({ kind: "reply", text: `the codename is ${TERM}` })
    const refusal = await refusalOf(anthropic.messages.create({ model: "gpt-4o", max_tokens: 50, messages: [{ role: "user", content: "tell me" }] }))
    expect(refusal).toMatchObject({ status: 422, json: { type: "error", error: { code: "output_guardrail_violation" } } })
    expect(refusal.body.toLowerCase()).not.toContain("nightingale")
  })

  it("a violating stream arrives whole, and the log line records the violation", async () => {
    fakes.anthropic.script({ kind: "reply", text: `your card 4111 1111 1111 1111 is on file` })
    const final = await anthropic.messages.stream({ model: "claude-e2e", max_tokens: 50, messages: [{ role: "user", content: "which card?" }] }).finalMessage()
    expect(final.content[0]).toMatchObject({ type: "text", text: "your card 4111 1111 1111 1111 is on file" })
    const line = (await waitForRequestLogs(gateway, 1)).at(-1)!
    expect(line).toMatchObject({ status: 200, guardrail_output: "payment_card" })
  })

  it("a clean answer goes out untouched", async () => {
    const response = await openai.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello there" }] })
    expect(response.choices[0].message.content).toBe("echo: hello there")
  })
})
