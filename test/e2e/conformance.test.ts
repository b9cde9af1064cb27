/**
 * One conformance suite, run against every provider family's fake
 * (test/fixtures/conformance.ts): a caller of each format (Chat Completions,
 * Messages, Responses, through the official `openai` and `@anthropic-ai/sdk`
 * clients, and through the AI SDK: conformance-ai-sdk.ts), streamed and not, gets a text answer, parallel tool calls whose ids
 * hold across turns, images, thinking kept out of the answer, structured
 * output, classified errors and a broken stream, whichever family answers.
 * Every upstream request is checked to carry the family's own auth.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { FAMILIES } from "../fixtures/conformance.ts"
import type { Family, Scenario } from "../fixtures/conformance.ts"
import { aiSdkFailure, askAiSdk, toolTurnWithAiSdk } from "./conformance-ai-sdk.ts"
import type { AiSdkApi } from "./conformance-ai-sdk.ts"
import type { Answer, Ask, Turn } from "./conformance-ask.ts"
import { argsOf, TOOL_NAMES, WEATHER } from "./conformance-ask.ts"
import { gatewayWithFakes } from "./harness.ts"

type Caller = "openai" | "anthropic" | "responses" | "ai-sdk chat" | "ai-sdk responses" | "ai-sdk messages"
const CALLERS: ReadonlyArray<Caller> = ["openai", "anthropic", "responses", "ai-sdk chat", "ai-sdk responses", "ai-sdk messages"]
/** The wire format each caller speaks. */
const FORMAT: Readonly<Record<Caller, "openai" | "anthropic" | "responses">> = {
  openai: "openai",
  anthropic: "anthropic",
  responses: "responses",
  "ai-sdk chat": "openai",
  "ai-sdk responses": "responses",
  "ai-sdk messages": "anthropic"
}

const { fakes, gateway: gw } = gatewayWithFakes(
  Object.fromEntries(FAMILIES.map((family) => [family.name, family.fake])),
  (fakes) => ({
    providers: Object.fromEntries(FAMILIES.map((family) => [`conf-${family.name}`, family.provider(fakes[family.name].url)])),
    routing: { retry: { max_retries: 0 } }
  }),
  Object.assign({}, ...FAMILIES.map((family) => family.env))
)

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })

const openAiMessages = (turns: ReadonlyArray<Turn>): Array<OpenAI.ChatCompletionMessageParam> =>
  turns.map((turn): OpenAI.ChatCompletionMessageParam => {
    if (turn.role === "tool") return { role: "tool", tool_call_id: turn.toolCallId!, content: turn.text! }
    if (turn.role === "assistant") {
      return {
        role: "assistant",
        content: turn.text ?? null,
        tool_calls: turn.toolCalls?.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: JSON.stringify(c.args) } }))
      }
    }
    if (turn.image === undefined) return { role: "user", content: turn.text! }
    const url = "url" in turn.image ? turn.image.url : `data:${turn.image.mediaType};base64,${turn.image.base64}`
    return { role: "user", content: [{ type: "text", text: turn.text! }, { type: "image_url", image_url: { url } }] }
  })

const anthropicMessages = (turns: ReadonlyArray<Turn>): Array<Anthropic.MessageParam> => {
  const out: Array<Anthropic.MessageParam> = []
  for (const turn of turns) {
    if (turn.role === "tool") {
      const block: Anthropic.ToolResultBlockParam = { type: "tool_result", tool_use_id: turn.toolCallId!, content: turn.text! }
      const last = out.at(-1)
      if (last?.role === "user" && Array.isArray(last.content)) last.content.push(block)
      else out.push({ role: "user", content: [block] })
    } else if (turn.role === "assistant") {
      out.push({
        role: "assistant",
        content: [
          ...(turn.text === undefined ? [] : [{ type: "text" as const, text: turn.text }]),
          ...(turn.toolCalls ?? []).map((c) => ({ type: "tool_use" as const, id: c.id, name: c.name, input: c.args }))
        ]
      })
    } else if (turn.image === undefined) {
      out.push({ role: "user", content: turn.text! })
    } else {
      const source: Anthropic.ImageBlockParam["source"] = "url" in turn.image
        ? { type: "url", url: turn.image.url }
        : { type: "base64", media_type: turn.image.mediaType as "image/png", data: turn.image.base64 }
      out.push({ role: "user", content: [{ type: "text", text: turn.text! }, { type: "image", source }] })
    }
  }
  return out
}

const responsesInput = (turns: ReadonlyArray<Turn>): Array<OpenAI.Responses.ResponseInputItem> =>
  turns.flatMap((turn): Array<OpenAI.Responses.ResponseInputItem> => {
    if (turn.role === "tool") return [{ type: "function_call_output", call_id: turn.toolCallId!, output: turn.text! }]
    if (turn.role === "assistant") {
      return [
        ...(turn.text === undefined ? [] : [{ role: "assistant" as const, content: turn.text }]),
        ...(turn.toolCalls ?? []).map((c) => ({ type: "function_call" as const, call_id: c.id, name: c.name, arguments: JSON.stringify(c.args) }))
      ]
    }
    if (turn.image === undefined) return [{ role: "user", content: turn.text! }]
    const url = "url" in turn.image ? turn.image.url : `data:${turn.image.mediaType};base64,${turn.image.base64}`
    return [{ role: "user", content: [{ type: "input_text", text: turn.text! }, { type: "input_image", image_url: url, detail: "auto" }] }]
  })

const askOpenAi = async (model: string, ask: Ask, stream: boolean): Promise<Answer> => {
  const params: OpenAI.ChatCompletionCreateParamsNonStreaming = {
    model,
    messages: openAiMessages(ask.turns),
    ...(ask.tools === true ? { tools: TOOL_NAMES.map((name) => ({ type: "function" as const, function: { name, parameters: WEATHER } })) } : {}),
    ...(ask.jsonSchema === undefined ? {} : { response_format: { type: "json_schema" as const, json_schema: { name: "answer", schema: ask.jsonSchema } } }),
    ...(ask.reasoning === true ? { reasoning_effort: "low" as const } : {})
  }
  const completion = stream
    ? await openai().chat.completions.stream({ ...params, stream: true, stream_options: { include_usage: true } }).finalChatCompletion()
    : await openai().chat.completions.create(params)
  const choice = completion.choices[0]
  const calls = (choice.message.tool_calls ?? []).flatMap((c) => (c.type === "function" ? [{ id: c.id, name: c.function.name, args: argsOf(c.function.arguments) }] : []))
  return {
    text: choice.message.content ?? "",
    toolCalls: calls,
    finish: choice.finish_reason === "tool_calls" ? "tool" : choice.finish_reason === "length" ? "length" : "stop",
    outputTokens: completion.usage?.completion_tokens,
    reasoningItems: 0
  }
}

const askAnthropic = async (model: string, ask: Ask, stream: boolean): Promise<Answer> => {
  const params: Anthropic.MessageCreateParamsNonStreaming = {
    model,
    max_tokens: 2000,
    messages: anthropicMessages(ask.turns),
    ...(ask.tools === true ? { tools: TOOL_NAMES.map((name) => ({ name, input_schema: WEATHER as Anthropic.Tool.InputSchema })) } : {}),
    ...(ask.reasoning === true ? { thinking: { type: "enabled" as const, budget_tokens: 1024 } } : {})
  }
  const message = stream ? await anthropic().messages.stream(params).finalMessage() : await anthropic().messages.create(params)
  return {
    text: message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(""),
    toolCalls: message.content.flatMap((b) => (b.type === "tool_use" ? [{ id: b.id, name: b.name, args: b.input as Record<string, unknown> }] : [])),
    finish: message.stop_reason === "tool_use" ? "tool" : message.stop_reason === "max_tokens" ? "length" : "stop",
    outputTokens: message.usage.output_tokens,
    reasoningItems: 0
  }
}

const askResponses = async (model: string, ask: Ask, stream: boolean): Promise<Answer> => {
  const params: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
    model,
    input: responsesInput(ask.turns),
    ...(ask.tools === true ? { tools: TOOL_NAMES.map((name) => ({ type: "function" as const, name, parameters: WEATHER, strict: false })) } : {}),
    ...(ask.jsonSchema === undefined ? {} : { text: { format: { type: "json_schema" as const, name: "answer", schema: ask.jsonSchema } } }),
    ...(ask.reasoning === true ? { reasoning: { effort: "low" as const } } : {})
  }
  const response = stream ? await openai().responses.stream({ ...params, stream: true }).finalResponse() : await openai().responses.create(params)
  const calls = response.output.flatMap((item) => (item.type === "function_call" ? [{ id: item.call_id, name: item.name, args: argsOf(item.arguments) }] : []))
  return {
    text: response.output_text,
    toolCalls: calls,
    finish: calls.length > 0 ? "tool" : response.status === "incomplete" ? "length" : "stop",
    outputTokens: response.usage?.output_tokens,
    reasoningItems: response.output.filter((item) => item.type === "reasoning").length
  }
}

const AI_SDK_API: Readonly<Partial<Record<Caller, AiSdkApi>>> = { "ai-sdk chat": "chat", "ai-sdk responses": "responses", "ai-sdk messages": "messages" }

const ASK: Readonly<Record<Caller, (model: string, ask: Ask, stream: boolean) => Promise<Answer>>> = {
  openai: askOpenAi,
  anthropic: askAnthropic,
  responses: askResponses,
  "ai-sdk chat": (...args) => askAiSdk(gw.url, AI_SDK_API["ai-sdk chat"]!)(...args),
  "ai-sdk responses": (...args) => askAiSdk(gw.url, AI_SDK_API["ai-sdk responses"]!)(...args),
  "ai-sdk messages": (...args) => askAiSdk(gw.url, AI_SDK_API["ai-sdk messages"]!)(...args)
}

/** The caller-visible status and classification of a request that must fail (a success fails the test). */
const failureOf = async (request: Promise<unknown>): Promise<{ status: number | undefined; code: string | null | undefined }> => {
  const error = await request.then(() => "succeeded", (e: unknown) => e)
  if (error instanceof OpenAI.APIError) return { status: error.status, code: error.headers?.get("x-gw-error-code") }
  if (error instanceof Anthropic.APIError) return { status: error.status, code: error.headers?.get("x-gw-error-code") }
  const fromAiSdk = aiSdkFailure(error)
  if (fromAiSdk !== undefined) return fromAiSdk
  expect(error, "the request should have failed").toBeInstanceOf(Error)
  return { status: undefined, code: undefined }
}

const TEXT: Scenario = { text: "The answer is forty-two.", usage: { input: 11, output: 7 } }

describe.each(FAMILIES.map((family) => [family.name, family] as const))("conformance: %s provider", (_name, family: Family) => {
  const fake = () => fakes[family.name]
  const model = family.model
  const upstreamBody = () => fake().lastRequest()!.json as Record<string, any>

  describe.each(CALLERS.flatMap((caller) => [[caller, false], [caller, true]] as const))("%s caller, stream %s", (caller, stream) => {
    const ask = (request: Ask) => ASK[caller](model, request, stream)

    it("answers text, with the finish and the output usage, and the upstream got the family's auth", async () => {
      fake().script(family.answer(TEXT))
      const answer = await ask({ turns: [{ role: "user", text: "What is the answer?" }] })
      expect(answer).toMatchObject({ text: TEXT.text, toolCalls: [], finish: "stop", outputTokens: 7 })
      expect(family.authenticated(fake().lastRequest()!.headers)).toBe(true)
    })

    it("a cut answer finishes for its length", async () => {
      fake().script(family.answer({ text: "The answer", cut: true, usage: { input: 3, output: 2 } }))
      const answer = await ask({ turns: [{ role: "user", text: "Go on" }] })
      expect(answer).toMatchObject({ text: "The answer", finish: "length" })
    })

    it("parallel tool calls come back whole, and their results reach the upstream answering the ids it issued", async () => {
      const calls = [{ name: "get_weather", args: { city: "Paris" } }, { name: "get_time", args: { city: "Oslo" } }]
      fake().script(family.answer({ toolCalls: calls, usage: { input: 20, output: 12 } }))
      const question: Turn = { role: "user", text: "Weather in Paris and time in Oslo?" }
      const first = await ask({ turns: [question], tools: true })
      expect(first.finish).toBe("tool")
      expect(first.toolCalls.map(({ name, args }) => ({ name, args }))).toEqual(calls)
      expect(new Set(first.toolCalls.map((c) => c.id)).size).toBe(2)

      fake().script(family.answer(TEXT))
      const second = await ask({
        turns: [
          question,
          { role: "assistant", toolCalls: first.toolCalls },
          { role: "tool", toolCallId: first.toolCalls[0].id, text: "sunny" },
          { role: "tool", toolCallId: first.toolCalls[1].id, text: "noon" }
        ],
        tools: true
      })
      expect(second.text).toBe(TEXT.text)
      const results = family.toolResults(upstreamBody())
      expect(results.map((r) => r.content)).toEqual(["sunny", "noon"])
      const echoed = family.echoedToolIds(upstreamBody())
      if (echoed !== undefined) expect(results.map((r) => r.answers)).toEqual(echoed)
      else expect(results.map((r) => r.answers)).toEqual(["get_weather", "get_time"])
    })

    it("images reach the upstream, inline bytes and URLs (where the family takes them)", async () => {
      fake().script(family.answer(TEXT))
      await ask({ turns: [{ role: "user", text: "What is this?", image: { mediaType: "image/png", base64: "iVBORw0KGgo=" } }] })
      expect(family.images(upstreamBody())).toEqual([{ mediaType: "image/png", base64: "iVBORw0KGgo=" }])
      fake().script(family.answer(TEXT))
      await ask({ turns: [{ role: "user", text: "And this?", image: { url: "https://example.invalid/cat.png" } }] })
      // A family that takes no URL gets none: the gateway fetches nothing on the caller's behalf.
      expect(family.images(upstreamBody())).toEqual(family.takesImageUrls ? [{ url: "https://example.invalid/cat.png" }] : [])
    })

    it("thinking stays out of the answer text", async () => {
      fake().script(family.answer({ reasoning: "Let me think about it.", text: "Forty-two.", usage: { input: 5, output: 9 } }))
      const answer = await ask({ turns: [{ role: "user", text: "Think, then answer." }], reasoning: true })
      expect(answer.text).toBe("Forty-two.")
      if (FORMAT[caller] === "responses" && family.name !== "openai") expect(answer.reasoningItems).toBe(1)
    })

    // The official Anthropic caller asks no JSON schema here; the AI SDK's asks one with `output_config.format`.
    if (FORMAT[caller] !== "anthropic" || caller === "ai-sdk messages") {
      it("structured output: a JSON-schema answer parses, or a family that cannot give one is refused with 400 before it is asked", async () => {
        const schema = { type: "object", properties: { answer: { type: "integer" } }, required: ["answer"] }
        fake().script(family.answer({ text: '{"answer":42}', usage: { input: 5, output: 5 } }))
        if (family.structuredOutput || FORMAT[caller] === family.fake.kind) {
          const answer = await ask({ turns: [{ role: "user", text: "JSON please" }], jsonSchema: schema })
          expect(JSON.parse(answer.text)).toEqual({ answer: 42 })
          expect(family.askedSchema(upstreamBody())).toMatchObject({ properties: { answer: expect.anything() }, required: ["answer"] })
        } else {
          const failure = await failureOf(ask({ turns: [{ role: "user", text: "JSON please" }], jsonSchema: schema }))
          expect(failure.status).toBe(400)
          expect(fake().requests).toHaveLength(0)
        }
      })
    }

    const aiSdkApi = AI_SDK_API[caller]
    if (aiSdkApi !== undefined) {
      it("a tool turn sent back as the AI SDK's own response messages reaches the upstream whole: results answer the ids, reasoning kept out of the text", async () => {
        const calls = [{ name: "get_weather", args: { city: "Paris" } }, { name: "get_time", args: { city: "Oslo" } }]
        fake().script(family.answer({ reasoning: "Two lookups.", toolCalls: calls, usage: { input: 20, output: 12 } }))
        const turn = await toolTurnWithAiSdk(gw.url, aiSdkApi, model, stream, () => fake().script(family.answer(TEXT)))
        expect(turn).toEqual({ calls: ["get_weather", "get_time"], text: TEXT.text })
        const results = family.toolResults(upstreamBody())
        expect(results.map((r) => r.content)).toEqual(["sunny", "noon"])
        const echoed = family.echoedToolIds(upstreamBody())
        expect(results.map((r) => r.answers)).toEqual(echoed ?? ["get_weather", "get_time"])
      })
    }

    it("an upstream 429 is the caller's 429 classified rate_limit; a 503 overload is 529 overloaded", async () => {
      fake().script({ kind: "error", status: 429 })
      expect(await failureOf(ask({ turns: [{ role: "user", text: "hi" }] }))).toEqual({ status: 429, code: "rate_limit" })
      fake().script({ kind: "error", status: 503, message: "The model is overloaded. Please try again later." })
      expect(await failureOf(ask({ turns: [{ role: "user", text: "hi" }] }))).toEqual({ status: 529, code: "overloaded" })
    })

    const block = family.safetyBlock
    if (block !== undefined) {
      it("a safety filter that let nothing through is a 400 classified content_policy, naming the provider's reason, and is not retried", async () => {
        fake().reset()
        fake().script(block.script())
        const error = await ask({ turns: [{ role: "user", text: "Something forbidden" }] }).then(() => undefined, (e: unknown) => e)
        expect(await failureOf(Promise.reject(error))).toEqual({ status: 400, code: "content_policy" })
        expect(String((error as Error).message)).toContain(block.reason)
        expect(fake().requests).toHaveLength(1)
      })
    }

    if (stream) {
      it("an overload reported in the stream before any content is a failed request with its class", async () => {
        fake().script(family.overloadedStream)
        expect(await failureOf(ask({ turns: [{ role: "user", text: "hi" }] }))).toMatchObject({ code: family.overloadedStreamClass })
      })

      it("a stream that breaks after content ends in an error for the caller, never a clean finish", async () => {
        fake().script(family.brokenStream("Half an answer"))
        const failed = await ask({ turns: [{ role: "user", text: "hi" }] }).then(() => false, () => true)
        expect(failed).toBe(true)
      })
    }
  })
})
