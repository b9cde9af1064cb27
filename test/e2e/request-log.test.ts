/**
 * What the log lines of a request say: the request line's `finish_reason` in
 * one vocabulary whichever family answered, and the attempt line's reason for
 * a failure (network error code, which timeout, the upstream's status and
 * error type), never a body or a secret.
 */
import { describe, expect, it } from "vitest"
import { gatewayWithFakes, waitForRequestLogs } from "./harness.ts"

type Family = "openai" | "anthropic"

const PROVIDER_KEY = "sk-provider-key-never-logged"

const post = async (base: string, caller: Family, model: string, content: string, stream = false): Promise<number> => {
  const path = caller === "openai" ? "/v1/chat/completions" : "/v1/messages"
  const body = caller === "openai"
    ? { model, messages: [{ role: "user", content }], stream, tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }] }
    : { model, max_tokens: 20, messages: [{ role: "user", content }], stream, tools: [{ name: "get_weather", input_schema: { type: "object", properties: {} } }] }
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(caller === "anthropic" ? { "anthropic-version": "2023-06-01" } : {}) },
    body: JSON.stringify(body)
  })
  await res.arrayBuffer()
  return res.status
}

const { gateway: gw } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::LOG_OPENAI_KEY", timeout_ms: 300 },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model"], credential: "env::LOG_ANTHROPIC_KEY", timeout_ms: 300 }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  { LOG_OPENAI_KEY: PROVIDER_KEY, LOG_ANTHROPIC_KEY: PROVIDER_KEY }
)

/** Sends one request and returns its request line and its attempt lines. */
const logsOf = async (caller: Family, model: string, content = "hi", stream = false) => {
  const before = gw.requestLogs().length
  await post(gw.url, caller, model, content, stream)
  const line = (await waitForRequestLogs(gw, before + 1))[before]
  const attempts = gw.logs.filter((entry) => entry.msg === "attempt" && entry.request_id === line.request_id)
  return { line, attempts }
}

describe("the request line's finish_reason", () => {
  const pairs: Array<{ caller: Family; provider: Family; model: string }> = [
    { caller: "openai", provider: "openai", model: "gpt-4o" },
    { caller: "openai", provider: "anthropic", model: "claude-e2e-model" },
    { caller: "anthropic", provider: "anthropic", model: "claude-e2e-model" },
    { caller: "anthropic", provider: "openai", model: "gpt-4o" }
  ]
  for (const { caller, provider, model } of pairs) {
    for (const stream of [false, true]) {
      it(`${caller} → ${provider}${stream ? ", streamed" : ""}: a finished answer is "stop", a tool call "tool_calls"`, async () => {
        expect((await logsOf(caller, model, "hello", stream)).line.finish_reason).toBe("stop")
        expect((await logsOf(caller, model, "please use tool", stream)).line.finish_reason).toBe("tool_calls")
      })
    }
  }
})
