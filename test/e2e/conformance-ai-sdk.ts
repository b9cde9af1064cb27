/**
 * The AI SDK (`ai`, `@ai-sdk/openai`, `@ai-sdk/anthropic`) as a conformance
 * caller, pointed at the gateway the way its users point it at any
 * OpenAI- or Anthropic-compatible server: `createOpenAI({ baseURL }).chat(model)`
 * for Chat Completions, `.responses(model)` for the Responses API,
 * `createAnthropic({ baseURL })` for Messages. `generateText` and `streamText`
 * (the stream read part by part, an error part thrown), tools without
 * `execute` (the answer's tool calls come back to the test), structured output
 * with `Output.object`. The callers bring no key of their own (their
 * `Authorization` / `x-api-key` is taken off), so the gateway's configured
 * credential is what the upstream gets.
 */
import { createAnthropic } from "@ai-sdk/anthropic"
import { createOpenAI } from "@ai-sdk/openai"
import { APICallError, generateText, jsonSchema, Output, streamText, tool } from "ai"
import type { LanguageModel, ModelMessage, ToolSet } from "ai"
import type { Answer, Ask, Turn } from "./conformance-ask.ts"
import { TOOL_NAMES, WEATHER } from "./conformance-ask.ts"

export type AiSdkApi = "chat" | "responses" | "messages"

/** fetch without the SDK's own key: the gateway then uses the provider's configured credential. */
export const keyless: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers)
  headers.delete("authorization")
  headers.delete("x-api-key")
  return fetch(input, { ...init, headers })
}

const modelOf = (gatewayUrl: string, api: AiSdkApi, model: string): LanguageModel => {
  if (api === "messages") return createAnthropic({ baseURL: `${gatewayUrl}/v1`, apiKey: "unused", fetch: keyless })(model)
  const openai = createOpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: "unused", fetch: keyless })
  return api === "chat" ? openai.chat(model) : openai.responses(model)
}

const messagesOf = (turns: ReadonlyArray<Turn>): Array<ModelMessage> => {
  const names = new Map<string, string>()
  return turns.map((turn): ModelMessage => {
    if (turn.role === "tool") {
      return {
        role: "tool",
        content: [{ type: "tool-result", toolCallId: turn.toolCallId!, toolName: names.get(turn.toolCallId!) ?? "", output: { type: "text", value: turn.text! } }]
      }
    }
    if (turn.role === "assistant") {
      for (const call of turn.toolCalls ?? []) names.set(call.id, call.name)
      return {
        role: "assistant",
        content: [
          ...(turn.text === undefined ? [] : [{ type: "text" as const, text: turn.text }]),
          ...(turn.toolCalls ?? []).map((c) => ({ type: "tool-call" as const, toolCallId: c.id, toolName: c.name, input: c.args }))
        ]
      }
    }
    if (turn.image === undefined) return { role: "user", content: turn.text! }
    const image = "url" in turn.image
      ? { type: "image" as const, image: new URL(turn.image.url) }
      : { type: "image" as const, image: turn.image.base64, mediaType: turn.image.mediaType }
    return { role: "user", content: [{ type: "text", text: turn.text! }, image] }
  })
}

const TOOLS: ToolSet = Object.fromEntries(TOOL_NAMES.map((name) => [name, tool({ inputSchema: jsonSchema(WEATHER as Parameters<typeof jsonSchema>[0]) })]))

const finishOf = (reason: string): Answer["finish"] => (reason === "tool-calls" ? "tool" : reason === "length" ? "length" : "stop")

/** Asks through the AI SDK; a failed request rejects with the SDK's own error (an `APICallError` when the gateway answered one). */
export const askAiSdk = (gatewayUrl: string, api: AiSdkApi) => async (model: string, ask: Ask, stream: boolean): Promise<Answer> => {
  const options = {
    model: modelOf(gatewayUrl, api, model),
    messages: messagesOf(ask.turns),
    maxRetries: 0,
    ...(api === "messages" ? { maxOutputTokens: 2000 } : {}),
    ...(ask.tools === true ? { tools: TOOLS } : {}),
    ...(ask.reasoning === true ? { reasoning: "low" as const } : {}),
    ...(ask.jsonSchema === undefined ? {} : {
      output: Output.object({ schema: jsonSchema(ask.jsonSchema as Parameters<typeof jsonSchema>[0]) }),
      // Messages' native structured output (`output_config.format`), whatever the model's name: the SDK
      // would otherwise force a `json` tool for a model it does not know as Claude.
      providerOptions: { anthropic: { structuredOutputMode: "outputFormat" as const } }
    })
  }
  if (!stream) {
    const result = await generateText(options)
    return {
      text: ask.jsonSchema === undefined ? result.text : JSON.stringify(result.output),
      toolCalls: result.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, args: c.input as Record<string, unknown> })),
      finish: finishOf(result.finishReason),
      outputTokens: result.usage.outputTokens,
      reasoningItems: result.reasoning.length
    }
  }
  // Errors are read from the stream's error part (and thrown), not logged.
  const result = streamText({ ...options, onError: () => {} })
  for await (const part of result.stream) if (part.type === "error") throw part.error
  const [text, toolCalls, finish, usage, reasoning] = await Promise.all([result.text, result.toolCalls, result.finishReason, result.usage, result.reasoning])
  return {
    text: ask.jsonSchema === undefined ? text : JSON.stringify(await result.output),
    toolCalls: toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, args: c.input as Record<string, unknown> })),
    finish: finishOf(finish),
    outputTokens: usage.outputTokens,
    reasoningItems: reasoning.length
  }
}

/**
 * A tool turn the way AI SDK users write it: the first answer's own `response.messages`
 * (its tool calls, and the reasoning with its signatures) go back with the tool results.
 * The Responses model runs with `store: false`, so earlier items travel whole rather than
 * as `item_reference`s (which need OpenAI's own store, or the gateway's: `[responses]`).
 * `between` runs after the first answer (to script the second).
 */
export const toolTurnWithAiSdk = async (
  gatewayUrl: string,
  api: AiSdkApi,
  model: string,
  stream: boolean,
  between: () => void
): Promise<{ readonly calls: ReadonlyArray<string>; readonly text: string }> => {
  const options = {
    model: modelOf(gatewayUrl, api, model),
    tools: TOOLS,
    maxRetries: 0,
    maxOutputTokens: 2000,
    reasoning: "low" as const,
    providerOptions: { openai: { store: false } }
  }
  const messages: Array<ModelMessage> = [{ role: "user", content: "Weather in Paris and time in Oslo?" }]
  const ask = async () => {
    if (!stream) return generateText({ ...options, messages })
    const result = streamText({ ...options, messages, onError: () => {} })
    for await (const part of result.stream) if (part.type === "error") throw part.error
    return { toolCalls: await result.toolCalls, text: await result.text, response: await result.response }
  }
  const first = await ask()
  messages.push(...first.response.messages, {
    role: "tool",
    content: first.toolCalls.map((c, i) => ({ type: "tool-result" as const, toolCallId: c.toolCallId, toolName: c.toolName, output: { type: "text" as const, value: ["sunny", "noon"][i] ?? "" } }))
  })
  between()
  const second = await ask()
  return { calls: first.toolCalls.map((c) => c.toolName), text: second.text }
}

/** The status and classification of a failure the AI SDK reported, when the gateway answered one. */
export const aiSdkFailure = (error: unknown): { status: number | undefined; code: string | null | undefined } | undefined =>
  APICallError.isInstance(error) ? { status: error.statusCode, code: error.responseHeaders?.["x-gw-error-code"] } : undefined
