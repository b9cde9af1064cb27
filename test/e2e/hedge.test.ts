/**
 * Hedging end to end (`hedge_after_ms`): a fake whose stream sends its
 * preamble (a role-only chunk; `message_start`, `content_block_start` and
 * `ping`; `response.created`) and then goes silent gets the route's next
 * target started beside it; the hedge's stream is the answer, read by the
 * official SDKs' streaming helpers, and the slow upstream sees its connection
 * closed. The request line lists the hedge, the loser's attempt line says
 * `lost`, and the loser's usage (Anthropic's `message_start`) is priced.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { ANTHROPIC_PING, anthropicEvent, anthropicStartMessage, openAiChunk, sseEvent } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

const retry = { max_retries: 0, backoff_base_ms: 1 }
const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    },
    // Anthropic input at $1 a token, OpenAI free: a request's cost counts Anthropic's input tokens.
    models: { "claude-sonnet-4-5": { input_per_mtok: 1_000_000, output_per_mtok: 0 }, "gpt-4o": { input_per_mtok: 0, output_per_mtok: 0 } },
    targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-sonnet-4-5" } },
    routes: {
      openai_first: { endpoint: "chat", models: ["openai-first"], strategy: "fallback", targets: ["gpt", "claude"], hedge_after_ms: 300, retry },
      claude_first: { endpoint: "chat", models: ["claude-first"], strategy: "fallback", targets: ["claude", "gpt"], hedge_after_ms: 300, retry }
    }
  }),
  { OPENAI_KEY: "sk-openai-hedge", ANTHROPIC_KEY: "sk-ant-hedge" }
)

let openai: OpenAI
let anthropic: Anthropic
beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
})

/** OpenAI's preamble, then silence (the connection stays open). */
const openAiStalls = () => fakes.openai.script({ kind: "sse", events: [openAiChunk({ role: "assistant", content: "" })], thenError: "hang" })
/** Anthropic's preamble (no content yet, its input usage given), then silence. */
const anthropicStalls = () =>
  fakes.anthropic.script({
    kind: "sse",
    events: [
      anthropicEvent("message_start", { message: anthropicStartMessage({ blocks: [], usage: { input_tokens: 7, output_tokens: 1 } }) }),
      anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      ANTHROPIC_PING
    ],
    thenError: "hang"
  })

/** The request line and attempt lines of the last request. */
const linesOfLast = async () => {
  const logs = await waitForRequestLogs(gateway, 1)
  const last = logs.at(-1)!
  return { request: last, attempts: gateway.logs.filter((line) => line.msg === "attempt" && line.request_id === last.request_id) }
}

describe("hedge_after_ms end to end", () => {
  it("OpenAI caller: OpenAI is silent after its role chunk, the Anthropic hedge's stream is the answer and OpenAI's request is closed", async () => {
    openAiStalls()
    const final = await openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "hedge me" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: hedge me")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.anthropic.requests.length).toBe(1)
    const { request, attempts } = await linesOfLast()
    expect(request).toMatchObject({ provider: "anthropic", status: 200, attempts: 2 })
    expect(request.hedges).toEqual([{ target: "claude", provider: "anthropic", model: "claude-sonnet-4-5", outcome: "won" }])
    expect(attempts.map((line) => [line.provider, line.outcome, line.hedge]).sort()).toEqual([
      ["anthropic", "ok", "hedge"],
      ["openai", "lost", "primary"]
    ])
  })

  it("Anthropic caller: a silent Anthropic stream (message_start, content_block_start, ping) loses to the OpenAI hedge; its input tokens are priced", async () => {
    anthropicStalls()
    const final = await anthropic.messages.stream({ model: "claude-first", max_tokens: 64, messages: [{ role: "user", content: "claude is slow" }] }).finalMessage()
    expect(final.content).toHaveLength(1)
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: claude is slow" })
    await fakes.anthropic.waitForClosedEarly(1)
    expect(fakes.openai.requests.length).toBe(1)
    const { request } = await linesOfLast()
    expect(request).toMatchObject({ provider: "openai", attempts: 2 })
    expect(request.hedges).toEqual([{ target: "gpt", provider: "openai", model: "gpt-4o", outcome: "won" }])
    // The loser's message_start said 7 input tokens, at $1 each; the winner is free.
    expect(request.cost_usd).toBe(7)
  })

  it("Responses caller: a Responses stream that sent response.created only loses to the Anthropic hedge", async () => {
    const pending = { id: "resp_slow", object: "response", created_at: 0, status: "in_progress", model: "gpt-4o", output: [], usage: null }
    fakes.openai.script({
      kind: "sse",
      path: "/responses",
      events: [sseEvent("response.created", { type: "response.created", sequence_number: 0, response: pending })],
      thenError: "hang"
    })
    const final = await openai.responses.stream({ model: "openai-first", input: "responses hedge" }).finalResponse()
    expect(final.output_text).toBe("echo: responses hedge")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.openai.requests[0].pathname).toBe("/v1/responses")
    expect(fakes.anthropic.requests.length).toBe(1)
  })

  it("the first target's content arrives before the hedge's: it is the answer and the hedge's request is closed", async () => {
    fakes.openai.script({ kind: "delay", ms: 600 })
    fakes.anthropic.script({ kind: "delay", ms: 5_000 })
    const final = await openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "first after all" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: first after all")
    await fakes.anthropic.waitForClosedEarly(1)
    const { request, attempts } = await linesOfLast()
    expect(request).toMatchObject({ provider: "openai", attempts: 2 })
    expect(request.hedges).toEqual([{ target: "claude", provider: "anthropic", model: "claude-sonnet-4-5", outcome: "lost" }])
    expect(attempts.map((line) => [line.provider, line.outcome]).sort()).toEqual([["anthropic", "lost"], ["openai", "ok"]])
  })

  it("a request that does not stream: the first whole answer wins, the other request is closed", async () => {
    fakes.openai.script({ kind: "hang" })
    const completion = await openai.chat.completions.create({ model: "openai-first", messages: [{ role: "user", content: "whole answer" }] })
    expect(completion.choices[0].message.content).toBe("echo: whole answer")
    await fakes.openai.waitForClosedEarly(1)
    const { request } = await linesOfLast()
    expect(request).toMatchObject({ provider: "anthropic", status: 200 })
  })
})
