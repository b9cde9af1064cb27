/**
 * `ttft_ms` end to end: a fake whose stream sends its preamble (a role-only
 * chunk; `message_start`, `content_block_start` and `ping`) and then goes
 * silent is given up before the commit; the next target's stream is the
 * answer, read by the official SDKs' streaming helpers, with no error; the
 * slow upstream sees its connection closed; the attempt's log line says
 * which timeout ran out.
 */
import { describe, expect, it } from "vitest"
import { openAiChunk } from "../fixtures/fake-upstream.ts"
import { anthropicStall, openAiStall, responsesStall } from "../fixtures/stalls.ts"
import { openAiAndAnthropic } from "./two-providers.ts"

const { fakes, sdk, linesOfLast } = openAiAndAnthropic({
  openai_first: { endpoint: "chat", models: ["openai-first"], strategy: "fallback", targets: ["gpt", "claude"], ttft_ms: 300, retry: { max_retries: 0, backoff_base_ms: 1 } },
  claude_first: { endpoint: "chat", models: ["claude-first"], strategy: "fallback", targets: ["claude", "gpt"], ttft_ms: 300, retry: { max_retries: 0, backoff_base_ms: 1 } },
  patient: { endpoint: "chat", models: ["patient"], strategy: "fallback", targets: ["gpt", "claude"], retry: { max_retries: 0, backoff_base_ms: 1 } }
})

const openAiStalls = () => fakes.openai.script(openAiStall())
const anthropicStalls = () => fakes.anthropic.script(anthropicStall())

describe("ttft_ms end to end", () => {
  it("OpenAI caller: a stalled OpenAI stream fails over to Anthropic before the commit; the helper sees one whole answer", async () => {
    openAiStalls()
    const stream = sdk.openai.chat.completions.stream({ model: "openai-first", messages: [{ role: "user", content: "first token please" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("echo: first token please")
    await fakes.openai.waitForClosedEarly(1)
    expect(fakes.anthropic.requests.length).toBe(1)
    const { request, attempts } = await linesOfLast()
    expect(request).toMatchObject({ provider: "anthropic", status: 200, attempts: 2 })
    expect(attempts.map((line) => [line.provider, line.outcome, line.timeout])).toEqual([
      ["openai", "upstream", "first_token"],
      ["anthropic", "ok", undefined]
    ])
  })

  it("Anthropic caller: a stalled Anthropic stream (message_start, content_block_start, ping) fails over to OpenAI", async () => {
    anthropicStalls()
    const stream = sdk.anthropic.messages.stream({ model: "claude-first", max_tokens: 64, messages: [{ role: "user", content: "claude stalls" }] })
    const final = await stream.finalMessage()
    expect(final.content).toHaveLength(1)
    expect(final.content[0]).toMatchObject({ type: "text", text: "echo: claude stalls" })
    await fakes.anthropic.waitForClosedEarly(1)
    expect(fakes.openai.requests.length).toBe(1)
    const { attempts } = await linesOfLast()
    expect(attempts.map((line) => [line.provider, line.timeout])).toEqual([["anthropic", "first_token"], ["openai", undefined]])
  })

  it("Responses caller: a Responses stream that sent response.created and response.in_progress only fails over to Anthropic", async () => {
    fakes.openai.script(responsesStall(true))
    const final = await sdk.openai.responses.stream({ model: "openai-first", input: "responses stall" }).finalResponse()
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
    const stream = sdk.openai.chat.completions.stream({ model: "patient", messages: [{ role: "user", content: "wait for me" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("late but fine")
    expect(fakes.anthropic.requests.length).toBe(0)
  })
})
