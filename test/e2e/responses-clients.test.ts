/**
 * The Responses API's state as the clients that rely on it use it, with an
 * Anthropic model behind the gateway (`[responses]` on, fake Anthropic on
 * loopback): the AI SDK's `openai.responses(...)` provider running a
 * multi-step streamed tool loop with parallel calls (store left at its
 * default, so its second step sends earlier items as `item_reference`), and
 * the OpenAI Agents SDK in Responses mode completing a tool-using run.
 */
import { createOpenAI } from "@ai-sdk/openai"
import { setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents"
import { Agent, run, tool as agentTool } from "@openai/agents"
import { stepCountIs, streamText, tool } from "ai"
import OpenAI from "openai"
import { afterAll, describe, expect, it } from "vitest"
import { z } from "zod"
import { anthropicStream } from "../fixtures/fake-upstream.ts"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import { gatewayWithFakes } from "./harness.ts"

let redis: OwnRedis | undefined

const { fakes, gateway } = gatewayWithFakes(
  { anthropic: { kind: "anthropic" } },
  async (fakes) => {
    redis = await startOwnRedis()
    return {
      providers: { anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "env::ANTHROPIC_KEY" } },
      cache: { enabled: false, url: redis.url, encrypt_salt: "responses-clients-salt" },
      responses: { enabled: true, timeout_ms: 500 }
    }
  },
  { ANTHROPIC_KEY: "sk-ant-clients-0001" }
)

afterAll(async () => {
  await redis?.kill()
})

type AnthropicMessage = { role: string; content: Array<Record<string, unknown>> }
const anthropicMessages = (index: number) => (fakes.anthropic.requests[index].json as { messages: Array<AnthropicMessage> }).messages

/** Requests the gateway received at /v1/responses are not visible to a test: the caller's bodies are recorded here. */
const recordingFetch = (bodies: Array<Record<string, unknown>>): typeof fetch => async (input, init) => {
  if (typeof init?.body === "string") bodies.push(JSON.parse(init.body) as Record<string, unknown>)
  return fetch(input, init)
}

describe("the AI SDK's openai.responses provider on an Anthropic model", () => {
  it("a multi-step streamed tool loop with parallel calls completes; its second step sends item_reference items the store resolves", async () => {
    // Step one: two tool calls in one answer (parallel), streamed.
    fakes.anthropic.script({
      kind: "sse",
      events: anthropicStream({
        id: "msg_parallel_1",
        model: "claude-e2e",
        blocks: [
          { type: "text", pieces: ["Checking both."] },
          { type: "tool_use", id: "toolu_paris", name: "get_weather", pieces: ['{"city":', '"Paris"}'] },
          { type: "tool_use", id: "toolu_rome", name: "get_weather", pieces: ['{"city":"Rome"}'] }
        ]
      })
    })
    const bodies: Array<Record<string, unknown>> = []
    const openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "gw-unused", headers: { "x-gw-authorization": "Bearer gw-caller-aisdk-0001" }, fetch: recordingFetch(bodies) })
    const executed: Array<string> = []
    const result = streamText({
      model: openai.responses("claude-e2e"),
      prompt: "What is the weather in Paris and Rome?",
      tools: {
        get_weather: tool({
          description: "Weather in a city",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            executed.push(city)
            return `${city}: 18C`
          }
        })
      },
      stopWhen: stepCountIs(4)
    })
    const text = await result.text
    const steps = await result.steps
    expect(executed.sort()).toEqual(["Paris", "Rome"])
    expect(steps).toHaveLength(2)
    expect(steps[0].toolCalls).toHaveLength(2)
    expect(text).toBe("echo: Paris: 18C Rome: 18C")

    // The SDK sent step one's output back by reference, as it does with store left on.
    expect(bodies).toHaveLength(2)
    expect(bodies[0].store).toBeUndefined()
    const sentTypes = (bodies[1].input as Array<Record<string, unknown>>).map((item) => item.type ?? item.role)
    expect(sentTypes).toContain("item_reference")
    // Anthropic got the whole conversation: the user turn, both tool_use blocks, both results.
    const sent = anthropicMessages(1)
    expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "user"])
    expect(sent[1].content.filter((part) => part.type === "tool_use").map((part) => part.id)).toEqual(["toolu_paris", "toolu_rome"])
    expect(sent[2].content.filter((part) => part.type === "tool_result").map((part) => part.tool_use_id)).toEqual(["toolu_paris", "toolu_rome"])
  })
})

describe("the OpenAI Agents SDK (Responses mode) on an Anthropic model", () => {
  it("completes a tool-using run", async () => {
    setTracingDisabled(true)
    setOpenAIAPI("responses")
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "gw-unused", maxRetries: 0, defaultHeaders: { authorization: null, "x-gw-authorization": "Bearer gw-caller-agents-0001" } })
    // The Agents SDK pins its own copy of the openai package: the same client API, another type.
    setDefaultOpenAIClient(client as unknown as Parameters<typeof setDefaultOpenAIClient>[0])
    const called: Array<string> = []
    const getWeather = agentTool({
      name: "get_weather",
      description: "Weather in a city",
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        called.push(city)
        return `${city}: 18C and sunny`
      }
    })
    const agent = new Agent({ name: "Weather", instructions: "Answer with the weather.", model: "claude-e2e", tools: [getWeather] })
    const result = await run(agent, "use tool for Paris")
    expect(called).toEqual(["Paris"])
    expect(result.finalOutput).toBe("echo: Paris: 18C and sunny")
    expect(anthropicMessages(1).map((message) => message.role)).toEqual(["user", "assistant", "user"])

    // A streamed follow-up chained on the server side (previousResponseId): the store fills in the first run.
    const next = await run(agent, "and tomorrow?", { stream: true, previousResponseId: result.lastResponseId })
    await next.completed
    expect(next.finalOutput).toBe("echo: and tomorrow?")
    const sent = anthropicMessages(2)
    expect(sent.map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant", "user"])
    expect(sent[4].content).toEqual([{ type: "text", text: "and tomorrow?" }])
  })
})
