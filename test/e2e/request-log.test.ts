/**
 * What the log lines of a request say: the request line's `finish_reason` in
 * one vocabulary whichever family answered, and the attempt line's reason for
 * a failure (network error code, which timeout, the upstream's status and
 * error type), never a body or a secret.
 */
import { describe, expect, it } from "vitest"
import { closedPort } from "../fixtures/otlp-receiver.ts"
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

const { fakes, gateway: gw } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  async (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::LOG_OPENAI_KEY", timeout_ms: 300 },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model"], credential: "env::LOG_ANTHROPIC_KEY", timeout_ms: 300 },
      closed: { kind: "openai", base_url: `http://127.0.0.1:${await closedPort()}/v1`, models: ["gpt-closed"], credential: "none", timeout_ms: 300 }
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

describe("the attempt line says why an attempt failed", () => {
  it("a refused connection: the network error code, no status", async () => {
    const { attempts: [attempt] } = await logsOf("openai", "gpt-closed")
    expect(attempt).toMatchObject({ level: "warn", outcome: "upstream", network_error: "ECONNREFUSED" })
    expect(attempt.status).toBeUndefined()
  })

  it("a dropped connection: the network error code", async () => {
    fakes.openai.script({ kind: "drop" })
    const { attempts: [attempt] } = await logsOf("openai", "gpt-4o")
    expect(attempt.outcome).toBe("upstream")
    expect(attempt.network_error).toMatch(/^[A-Z_]+$/)
  })

  it("no response head within timeout_ms: the head timeout", async () => {
    fakes.anthropic.script({ kind: "hang" })
    const { attempts: [attempt] } = await logsOf("openai", "claude-e2e-model")
    expect(attempt).toMatchObject({ outcome: "upstream", timeout: "head" })
  })

  it("a stream that goes quiet before its first content: the idle-gap timeout", async () => {
    fakes.openai.script({ kind: "sse", events: [], thenError: "hang" })
    const { attempts: [attempt] } = await logsOf("openai", "gpt-4o", "hi", true)
    expect(attempt).toMatchObject({ outcome: "upstream", timeout: "idle" })
  })

  it("an upstream 5xx: its status and error type, never its body", async () => {
    fakes.anthropic.script({ kind: "error", status: 529, type: "overloaded_error", message: `overloaded, key ${PROVIDER_KEY} body-text-marker` })
    const { attempts: [attempt] } = await logsOf("anthropic", "claude-e2e-model")
    expect(attempt).toMatchObject({ outcome: "overloaded", status: 529, error_type: "overloaded_error" })
    fakes.openai.script({ kind: "error", status: 500, body: { error: { message: "body-text-marker", type: "server_error", code: null } } })
    const { attempts: [second] } = await logsOf("openai", "gpt-4o")
    expect(second).toMatchObject({ outcome: "upstream", status: 500, error_type: "server_error" })
    const attemptLines = JSON.stringify(gw.logs.filter((entry) => entry.msg === "attempt"))
    expect(attemptLines).not.toContain("body-text-marker")
    expect(attemptLines).not.toContain(PROVIDER_KEY)
  })

  it("a 200 whose body is not JSON: the status and the gateway's words for the problem", async () => {
    fakes.openai.script({ kind: "json", body: "this is not json body-text-marker" })
    const { attempts: [attempt] } = await logsOf("openai", "gpt-4o")
    expect(attempt).toMatchObject({ outcome: "upstream", status: 200 })
    expect(attempt.problem).toMatch(/JSON/)
    expect(attempt.problem).not.toContain("body-text-marker")
  })

  it("an upstream 4xx without an error type: its status alone", async () => {
    fakes.openai.script({ kind: "error", status: 400, body: "not json at all" })
    const { attempts: [attempt] } = await logsOf("openai", "gpt-4o")
    expect(attempt).toMatchObject({ outcome: "bad_request", status: 400 })
    expect(attempt.error_type).toBeUndefined()
  })
})
