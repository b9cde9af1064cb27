/**
 * `ttft_ms` end to end: a fake whose stream sends its preamble (a role-only
 * chunk; `message_start`, `content_block_start` and `ping`) and then goes
 * silent is given up before the commit; the next target's stream is the
 * answer, read by the official SDKs' streaming helpers, with no error; the
 * slow upstream sees its connection closed; the attempt's log line says
 * which timeout ran out.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { ANTHROPIC_PING, anthropicEvent, anthropicStartMessage, openAiChunk, sseEvent } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    },
    targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-sonnet-4-5" } },
    routes: {
      openai_first: { endpoint: "chat", models: ["openai-first"], strategy: "fallback", targets: ["gpt", "claude"], ttft_ms: 300, retry: { max_retries: 0, backoff_base_ms: 1 } },
      claude_first: { endpoint: "chat", models: ["claude-first"], strategy: "fallback", targets: ["claude", "gpt"], ttft_ms: 300, retry: { max_retries: 0, backoff_base_ms: 1 } },
      patient: { endpoint: "chat", models: ["patient"], strategy: "fallback", targets: ["gpt", "claude"], retry: { max_retries: 0, backoff_base_ms: 1 } }
    }
  }),
  { OPENAI_KEY: "sk-openai-ttft", ANTHROPIC_KEY: "sk-ant-ttft" }
)

let openai: OpenAI
let anthropic: Anthropic
beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
})

/** OpenAI's preamble, then silence (the connection stays open). */
const openAiStalls = () => fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" })], thenError: "hang" })
/** Anthropic's preamble (no content yet), then silence. */
const anthropicStalls = () =>
  fakes.anthropic.script({
    kind: "sse",
    events: [
      anthropicEvent("message_start", { message: anthropicStartMessage({ blocks: [] }) }),
      anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      ANTHROPIC_PING
    ],
    thenError: "hang"
  })

/** The attempt lines of the last request. */
const attemptsOfLast = async () => {
  const logs = await waitForRequestLogs(gateway, 1)
  const last = logs.at(-1)!
  return { request: last, attempts: gateway.logs.filter((line) => line.msg === "attempt" && line.request_id === last.request_id) }
}

describe("ttft_ms end to end", () => {
  it("OpenAI caller: a stalled OpenAI stream fails over to Anthropic before the commit; the helper sees one whole answer", async () => {
    openAiStalls()
    const stream = openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "first token please" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: first token please")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.anthropic.requests.length).toBe(1)
    const { request, attempts } = await attemptsOfLast()
    expect(request).toMatchObject({ provider: "anthropic", status: 200, attempts: 2 })
    expect(attempts.map((line) => [line.provider, line.outcome, line.timeout])).toEqual([
      ["openai", "upstream", "first_token"],
      ["anthropic", "ok", undefined]
    ])
  })

  it("Anthropic caller: a stalled Anthropic stream (message_start, content_block_start, ping) fails over to OpenAI", async () => {
    anthropicStalls()
    const stream = anthropic.messages.stream({ model: "claude-first", max_tokens: 64, messages: [{ role: "user", content: "claude stalls" }] })
    const final = await stream.finalMessage()
    expect(final.content).toHaveLength(1)
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: claude stalls" })
    await fakes.anthropic.waitForClosedEarly(1)
    expect(fakes.openai.requests.length).toBe(1)
    const { attempts } = await attemptsOfLast()
    expect(attempts.map((line) => [line.provider, line.timeout])).toEqual([["anthropic", "first_token"], ["openai", undefined]])
  })

  it("Responses caller: a Responses stream that sent response.created and response.in_progress only fails over to Anthropic", async () => {
    const pending = { id: "resp_stall", object: "response", created_at: 0, status: "in_progress", model: "gpt-4o", output: [], usage: null }
    fakes.openai.script({
      kind: "sse",
      path: "/responses",
      events: [
        sseEvent("response.created", { type: "response.created", sequence_number: 0, response: pending }),
        sseEvent("response.in_progress", { type: "response.in_progress", sequence_number: 1, response: pending })
      ],
      thenError: "hang"
    })
    const final = await openai.responses.stream({ model: "openai-first", input: "responses stall" }).finalResponse()
    expect(final.output_text).toBe("echo: responses stall")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.openai.requests[0].pathname).toBe("/v1/responses")
    expect(fakes.anthropic.requests.length).toBe(1)
  })

  it("without ttft_ms a slow first token is waited for: the first target's late content is the answer", async () => {
    fakes.openai.script({
      kind: "sse",
      events: [openAiChunk({ role: "assistant", content: "" }), openAiChunk({ content: "late but fine" }), openAiChunk({}, { finishReason: "stop" }), "data: [DONE]\n\n"],
      delayMs: 400
    })
    const stream = openai.chat.completions.stream({ model: "patient", messages: [{ role: "user", content: "wait for me" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("late but fine")
    expect(fakes.anthropic.requests.length).toBe(0)
  })
})
