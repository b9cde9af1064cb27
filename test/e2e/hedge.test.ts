/**
 * Hedging end to end (`hedge_after_ms`): a fake whose stream sends its
 * preamble (a role-only chunk; `message_start`, `content_block_start` and
 * `ping`; `response.created`) and then goes silent gets the route's next
 * target started beside it; the hedge's stream is the answer, read by the
 * official SDKs' streaming helpers, and the slow upstream sees its connection
 * closed. The request line lists the hedge, the loser's attempt line says
 * `lost`, and the loser's usage (Anthropic's `message_start`) is priced.
 */
import { describe, expect, it } from "vitest"
import { anthropicStall, openAiStall, responsesStall } from "../fixtures/stalls.ts"
import { openAiAndAnthropic } from "./two-providers.ts"

const retry = { max_retries: 0, backoff_base_ms: 1 }
const { fakes, sdk, linesOfLast } = openAiAndAnthropic(
  {
    openai_first: { endpoint: "chat", models: ["openai-first"], strategy: "fallback", targets: ["gpt", "claude"], hedge_after_ms: 300, retry },
    claude_first: { endpoint: "chat", models: ["claude-first"], strategy: "fallback", targets: ["claude", "gpt"], hedge_after_ms: 300, retry }
  },
  // Anthropic input at $1 a token, OpenAI free: a request's cost counts Anthropic's input tokens.
  { models: { "claude-sonnet-4-5": { input_per_mtok: 1_000_000, output_per_mtok: 0 }, "gpt-4o": { input_per_mtok: 0, output_per_mtok: 0 } } }
)

const openAiStalls = () => fakes.openai.script(openAiStall())
/** Anthropic's preamble says 7 input tokens (priced at $1 each), then silence. */
const anthropicStalls = () => fakes.anthropic.script(anthropicStall(7))

describe("hedge_after_ms end to end", () => {
  it("OpenAI caller: OpenAI is silent after its role chunk, the Anthropic hedge's stream is the answer and OpenAI's request is closed", async () => {
    openAiStalls()
    const final = await sdk.openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "hedge me" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: hedge me")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.anthropic.requests.length).toBe(1)
    const { request, attempts } = await linesOfLast()
    expect(request).toMatchObject({ provider: "anthropic", status: 200, attempts: 2 })
    expect(request.failovers).toBeUndefined()
    expect(request.hedges).toEqual([{ target: "claude", provider: "anthropic", model: "claude-sonnet-4-5", outcome: "won" }])
    expect(attempts.map((line) => [line.provider, line.outcome, line.hedge]).sort()).toEqual([
      ["anthropic", "ok", "hedge"],
      ["openai", "lost", "primary"]
    ])
  })

  it("Anthropic caller: a silent Anthropic stream (message_start, content_block_start, ping) loses to the OpenAI hedge; its input tokens are priced", async () => {
    anthropicStalls()
    const final = await sdk.anthropic.messages.stream({ model: "claude-first", max_tokens: 64, messages: [{ role: "user", content: "claude is slow" }] }).finalMessage()
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
    fakes.openai.script(responsesStall())
    const final = await sdk.openai.responses.stream({ model: "openai-first", input: "responses hedge" }).finalResponse()
    expect(final.output_text).toBe("echo: responses hedge")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.openai.requests[0].pathname).toBe("/v1/responses")
    expect(fakes.anthropic.requests.length).toBe(1)
  })

  it("the first target's content arrives before the hedge's: it is the answer and the hedge's request is closed", async () => {
    fakes.openai.script({ kind: "delay", ms: 600 })
    fakes.anthropic.script({ kind: "delay", ms: 5_000 })
    const final = await sdk.openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "first after all" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: first after all")
    await fakes.anthropic.waitForClosedEarly(1)
    const { request, attempts } = await linesOfLast()
    expect(request).toMatchObject({ provider: "openai", attempts: 2 })
    expect(request.failovers).toBeUndefined()
    expect(request.hedges).toEqual([{ target: "claude", provider: "anthropic", model: "claude-sonnet-4-5", outcome: "lost" }])
    expect(attempts.map((line) => [line.provider, line.outcome]).sort()).toEqual([["anthropic", "lost"], ["openai", "ok"]])
  })

  it("a hedge that loses after its message_start: its input tokens are priced too", async () => {
    fakes.openai.script({ kind: "delay", ms: 700 })
    anthropicStalls()
    const final = await sdk.openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "the hedge pays" }] }).finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: the hedge pays")
    await fakes.anthropic.waitForClosedEarly(1)
    const { request } = await linesOfLast()
    expect(request).toMatchObject({ provider: "openai", cost_usd: 7 })
    expect(request.hedges).toEqual([{ target: "claude", provider: "anthropic", model: "claude-sonnet-4-5", outcome: "lost" }])
  })

  it("a request that does not stream: the first whole answer wins, the other request is closed", async () => {
    fakes.openai.script({ kind: "hang" })
    const completion = await sdk.openai.chat.completions.create({ model: "openai-first", messages: [{ role: "user", content: "whole answer" }] })
    expect(completion.choices[0].message.content).toBe("echo: whole answer")
    await fakes.openai.waitForClosedEarly(1)
    const { request } = await linesOfLast()
    expect(request).toMatchObject({ provider: "anthropic", status: 200 })
  })
})
