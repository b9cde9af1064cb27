/**
 * An OpenAI and an Anthropic fake behind one gateway, with a target on each
 * (`gpt`: gpt-4o, `claude`: claude-sonnet-4-5), the routes a test file gives,
 * and the official SDK clients of that gateway: the setup of the tests of
 * routing between two providers (`ttft_ms`, hedging).
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { beforeAll } from "vitest"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

export const openAiAndAnthropic = (routes: Record<string, unknown>, sections: Record<string, unknown> = {}) => {
  const setup = gatewayWithFakes(
    { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
    (fakes) => ({
      providers: {
        openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
        anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
      },
      targets: { gpt: { model: "gpt-4o" }, claude: { model: "claude-sonnet-4-5" } },
      routes,
      ...sections
    }),
    { OPENAI_KEY: "sk-openai-two", ANTHROPIC_KEY: "sk-ant-two" }
  )
  let openai: OpenAI | undefined
  let anthropic: Anthropic | undefined
  beforeAll(() => {
    openai = new OpenAI({ baseURL: `${setup.gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
    anthropic = new Anthropic({ baseURL: setup.gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-api-key": null } })
  })
  /** The SDK clients, once the gateway is up (inside tests and later hooks). */
  const sdk = {
    get openai(): OpenAI {
      return openai!
    },
    get anthropic(): Anthropic {
      return anthropic!
    }
  }
  /** The request line of the last request, and its attempt lines. */
  const linesOfLast = async () => {
    const logs = await waitForRequestLogs(setup.gateway, 1)
    const last = logs.at(-1)!
    return { request: last, attempts: setup.gateway.logs.filter((line) => line.msg === "attempt" && line.request_id === last.request_id) }
  }
  return { ...setup, sdk, linesOfLast }
}
