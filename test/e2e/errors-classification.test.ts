/**
 * Upstream HTTP errors as the caller sees them (docs/reference/gateway-spec.md §7, docs/reference/DESIGN.md "Errors"): one or more
 * cases for every row of the classification table, same-provider (body verbatim) and
 * cross-provider (body translated into the caller's envelope), plus Retry-After,
 * 5xx redaction and unrecognized error bodies.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anthropicErrorBody, openAiErrorBody, startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes, startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const { fakes, gateway: gw } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::ERR_OPENAI_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model"], credential: "env::ERR_ANTHROPIC_KEY" }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  { ERR_OPENAI_KEY: "sk-err-openai", ERR_ANTHROPIC_KEY: "sk-err-anthropic" }
)

type Json = Record<string, any>
type Family = "openai" | "anthropic"

interface Reply {
  status: number
  headers: Headers
  text: string
  json: Json | undefined
}

const MODEL: Record<Family, string> = { openai: "gpt-4o", anthropic: "claude-e2e-model" }

/** One request from a caller of `caller` format to the model served by `provider`. */
const call = async (caller: Family, provider: Family, stream = false): Promise<Reply> => {
  const path = caller === "openai" ? "/v1/chat/completions" : "/v1/messages"
  const body =
    caller === "openai"
      ? { model: MODEL[provider], messages: [{ role: "user", content: "hi" }], stream }
      : { model: MODEL[provider], max_tokens: 20, messages: [{ role: "user", content: "hi" }], stream }
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(caller === "anthropic" ? { "anthropic-version": "2023-06-01" } : {}) },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  let json: Json | undefined
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, headers: res.headers, text, json }
}

const fakeOf = (provider: Family): FakeUpstream => (provider === "openai" ? fakes.openai : fakes.anthropic)

interface Row {
  /** What the caller notices, used as the test name. */
  name: string
  provider: Family
  caller: Family
  status: number
  body: string | object
  headers?: Record<string, string>
  expect: {
    status: number
    code: string
    /** Same-provider: the upstream body byte for byte. */
    verbatim?: boolean
    /** Caller's envelope: OpenAI `error.type` / `error.code`, Anthropic `error.type`. */
    type?: string
    openaiCode?: string | null
    message?: string
    retryAfter?: string
  }
}

const ORG_VERIFY_MESSAGE =
  "Your organization must be verified to use the model `o3`. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization."

const rows: Row[] = [
  // auth
  { name: "OpenAI 401 reaches an OpenAI caller verbatim as auth", provider: "openai", caller: "openai", status: 401, body: openAiErrorBody(401), expect: { status: 401, code: "auth", verbatim: true } },
  {
    name: "Anthropic 401 reaches an OpenAI caller as authentication_error / invalid_api_key",
    provider: "anthropic", caller: "openai", status: 401, body: anthropicErrorBody(401, "invalid x-api-key"),
    expect: { status: 401, code: "auth", type: "authentication_error", openaiCode: "invalid_api_key", message: "invalid x-api-key" }
  },
  {
    name: "OpenAI 401 reaches an Anthropic caller as authentication_error",
    provider: "openai", caller: "anthropic", status: 401, body: openAiErrorBody(401, "Incorrect API key provided: sk-abc."),
    expect: { status: 401, code: "auth", type: "authentication_error", message: "Incorrect API key provided: sk-abc." }
  },
  // forbidden
  { name: "OpenAI 403 reaches an OpenAI caller verbatim as forbidden", provider: "openai", caller: "openai", status: 403, body: openAiErrorBody(403), expect: { status: 403, code: "forbidden", verbatim: true } },
  {
    name: "Anthropic 403 permission_error reaches an OpenAI caller as permission_error / permission_denied",
    provider: "anthropic", caller: "openai", status: 403, body: anthropicErrorBody(403, "no access to this model"),
    expect: { status: 403, code: "forbidden", type: "permission_error", openaiCode: "permission_denied", message: "no access to this model" }
  },
  { name: "Anthropic 403 reaches an Anthropic caller verbatim as forbidden", provider: "anthropic", caller: "anthropic", status: 403, body: anthropicErrorBody(403), expect: { status: 403, code: "forbidden", verbatim: true } },
  // org_verification_required
  {
    name: "OpenAI 403 'organization must be verified' is org_verification_required, verbatim to an OpenAI caller",
    provider: "openai", caller: "openai", status: 403, body: openAiErrorBody(403, ORG_VERIFY_MESSAGE, "invalid_request_error", null),
    expect: { status: 403, code: "org_verification_required", verbatim: true }
  },
  {
    name: "OpenAI 403 'organization must be verified' reaches an Anthropic caller as permission_error",
    provider: "openai", caller: "anthropic", status: 403, body: openAiErrorBody(403, ORG_VERIFY_MESSAGE, "invalid_request_error", null),
    expect: { status: 403, code: "org_verification_required", type: "permission_error", message: ORG_VERIFY_MESSAGE }
  },
  // bad_request
  {
    name: "Anthropic 400 reaches an Anthropic caller verbatim as bad_request",
    provider: "anthropic", caller: "anthropic", status: 400, body: anthropicErrorBody(400, "messages: roles must alternate"),
    expect: { status: 400, code: "bad_request", verbatim: true }
  },
  {
    name: "Anthropic 400 reaches an OpenAI caller as invalid_request_error with the upstream message",
    provider: "anthropic", caller: "openai", status: 400, body: anthropicErrorBody(400, "messages: roles must alternate"),
    expect: { status: 400, code: "bad_request", type: "invalid_request_error", message: "messages: roles must alternate" }
  },
  {
    name: "OpenAI 422 reaches an Anthropic caller as 422 invalid_request_error",
    provider: "openai", caller: "anthropic", status: 422, body: openAiErrorBody(422, "Unprocessable entity: bad tool schema"),
    expect: { status: 422, code: "bad_request", type: "invalid_request_error", message: "Unprocessable entity: bad tool schema" }
  },
  {
    name: "OpenAI 422 reaches an OpenAI caller verbatim as bad_request",
    provider: "openai", caller: "openai", status: 422, body: openAiErrorBody(422, "Unprocessable entity"),
    expect: { status: 422, code: "bad_request", verbatim: true }
  },
  {
    name: "Anthropic 413 request_too_large reaches an OpenAI caller as 413 invalid_request_error",
    provider: "anthropic", caller: "openai", status: 413, body: anthropicErrorBody(413),
    expect: { status: 413, code: "bad_request", type: "invalid_request_error", message: "Request exceeds the maximum allowed number of bytes." }
  },
  {
    name: "OpenAI 413 reaches an Anthropic caller as 413 request_too_large",
    provider: "openai", caller: "anthropic", status: 413, body: openAiErrorBody(413, "Request too large"),
    expect: { status: 413, code: "bad_request", type: "request_too_large", message: "Request too large" }
  },
  // quota
  {
    name: "OpenAI 429 insufficient_quota reaches an OpenAI caller verbatim as quota",
    provider: "openai", caller: "openai", status: 429,
    body: openAiErrorBody(429, "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota"),
    expect: { status: 429, code: "quota", verbatim: true }
  },
  {
    name: "OpenAI 429 insufficient_quota reaches an Anthropic caller as 429 rate_limit_error, classified quota",
    provider: "openai", caller: "anthropic", status: 429,
    body: openAiErrorBody(429, "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota"),
    expect: { status: 429, code: "quota", type: "rate_limit_error", message: "You exceeded your current quota, please check your plan and billing details." }
  },
  {
    name: "Anthropic 402 billing_error reaches an Anthropic caller verbatim as quota",
    provider: "anthropic", caller: "anthropic", status: 402, body: anthropicErrorBody(402, "Your credit balance is too low to access the Anthropic API."),
    expect: { status: 402, code: "quota", verbatim: true }
  },
  {
    // docs/reference/gateway-spec.md §7.1: an upstream 4xx keeps its status (the spec wins over docs/reference/DESIGN.md's 429 here); the body is translated.
    name: "Anthropic 402 billing_error reaches an OpenAI caller as 402 insufficient_quota",
    provider: "anthropic", caller: "openai", status: 402, body: anthropicErrorBody(402, "Your credit balance is too low to access the Anthropic API."),
    expect: { status: 402, code: "quota", type: "insufficient_quota", openaiCode: "insufficient_quota", message: "Your credit balance is too low to access the Anthropic API." }
  },
  // rate_limit
  {
    name: "OpenAI 429 rate_limit_exceeded with Retry-After reaches an OpenAI caller verbatim, Retry-After re-emitted",
    provider: "openai", caller: "openai", status: 429, body: openAiErrorBody(429), headers: { "retry-after": "7" },
    expect: { status: 429, code: "rate_limit", verbatim: true, retryAfter: "7" }
  },
  {
    name: "Anthropic 429 without Retry-After reaches an OpenAI caller as rate_limit_error / rate_limit_exceeded, no Retry-After invented",
    provider: "anthropic", caller: "openai", status: 429, body: anthropicErrorBody(429, "Number of request tokens has exceeded your per-minute rate limit"),
    expect: { status: 429, code: "rate_limit", type: "rate_limit_error", openaiCode: "rate_limit_exceeded", message: "Number of request tokens has exceeded your per-minute rate limit" }
  },
  {
    name: "Anthropic 429 with Retry-After reaches an Anthropic caller verbatim, Retry-After re-emitted",
    provider: "anthropic", caller: "anthropic", status: 429, body: anthropicErrorBody(429), headers: { "retry-after": "5" },
    expect: { status: 429, code: "rate_limit", verbatim: true, retryAfter: "5" }
  },
  {
    name: "OpenAI 429 with Retry-After reaches an Anthropic caller as rate_limit_error, Retry-After re-emitted",
    provider: "openai", caller: "anthropic", status: 429, body: openAiErrorBody(429, "slow down"), headers: { "retry-after": "11" },
    expect: { status: 429, code: "rate_limit", type: "rate_limit_error", message: "slow down", retryAfter: "11" }
  },
  // overloaded
  {
    name: "docs/reference/gateway-spec.md §7.3 example: Anthropic 529 overloaded_error reaches an OpenAI caller as 529 rate_limit_error / rate_limit_exceeded",
    provider: "anthropic", caller: "openai", status: 529, body: anthropicErrorBody(529, "Overloaded"),
    expect: { status: 529, code: "overloaded", type: "rate_limit_error", openaiCode: "rate_limit_exceeded", message: "Overloaded" }
  },
  {
    name: "Anthropic 529 with Retry-After reaches an Anthropic caller verbatim as overloaded, Retry-After re-emitted",
    provider: "anthropic", caller: "anthropic", status: 529, body: anthropicErrorBody(529, "Overloaded"), headers: { "retry-after": "3" },
    expect: { status: 529, code: "overloaded", verbatim: true, retryAfter: "3" }
  },
  {
    name: "OpenAI 503 'model is overloaded' reaches an OpenAI caller as 529 overloaded",
    provider: "openai", caller: "openai", status: 503, body: openAiErrorBody(503),
    expect: { status: 529, code: "overloaded" }
  },
  {
    name: "OpenAI 503 'model is overloaded' reaches an Anthropic caller as 529 overloaded_error",
    provider: "openai", caller: "anthropic", status: 503, body: openAiErrorBody(503),
    expect: { status: 529, code: "overloaded", type: "overloaded_error" }
  },
  // content_policy
  {
    name: "OpenAI 400 content_policy_violation reaches an OpenAI caller verbatim as content_policy",
    provider: "openai", caller: "openai", status: 400,
    body: openAiErrorBody(400, "Your request was rejected as a result of our safety system.", "invalid_request_error", "content_policy_violation"),
    expect: { status: 400, code: "content_policy", verbatim: true }
  },
  {
    name: "OpenAI 400 content_filter reaches an Anthropic caller as 400 invalid_request_error, classified content_policy",
    provider: "openai", caller: "anthropic", status: 400,
    body: openAiErrorBody(400, "The response was filtered due to the prompt triggering content management policy.", "invalid_request_error", "content_filter"),
    expect: { status: 400, code: "content_policy", type: "invalid_request_error", message: "The response was filtered due to the prompt triggering content management policy." }
  },
  // model_not_found
  {
    name: "OpenAI 404 model_not_found reaches an OpenAI caller verbatim",
    provider: "openai", caller: "openai", status: 404,
    body: openAiErrorBody(404, "The model `gpt-4o` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    expect: { status: 404, code: "model_not_found", verbatim: true }
  },
  {
    name: "Anthropic 404 not_found_error reaches an OpenAI caller as invalid_request_error / model_not_found",
    provider: "anthropic", caller: "openai", status: 404, body: anthropicErrorBody(404, "model: claude-e2e-model"),
    expect: { status: 404, code: "model_not_found", type: "invalid_request_error", openaiCode: "model_not_found", message: "model: claude-e2e-model" }
  },
  {
    name: "OpenAI 404 reaches an Anthropic caller as not_found_error",
    provider: "openai", caller: "anthropic", status: 404,
    body: openAiErrorBody(404, "The model `gpt-4o` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    expect: { status: 404, code: "model_not_found", type: "not_found_error", message: "The model `gpt-4o` does not exist or you do not have access to it." }
  }
]

const headerCheck = (reply: Reply, row: Row) => {
  expect(reply.status, reply.text).toBe(row.expect.status)
  expect(reply.headers.get("x-gw-error-code")).toBe(row.expect.code)
  expect(reply.headers.get("x-gw-upstream-provider")).toBe(row.provider)
  expect(reply.headers.get("x-request-id")).toBeTruthy()
  if (row.expect.retryAfter !== undefined) expect(reply.headers.get("retry-after")).toBe(row.expect.retryAfter)
  else expect(reply.headers.get("retry-after")).toBeNull()
}

const envelopeCheck = (reply: Reply, row: Row) => {
  const upstreamText = typeof row.body === "string" ? row.body : JSON.stringify(row.body)
  if (row.expect.verbatim) {
    expect(reply.text).toBe(upstreamText)
    return
  }
  expect(reply.json, reply.text).toBeDefined()
  const json = reply.json!
  if (row.caller === "openai") {
    expect(json).not.toHaveProperty("type")
    expect(typeof json.error?.message).toBe("string")
    if (row.expect.type !== undefined) expect(json.error.type).toBe(row.expect.type)
    if (row.expect.openaiCode !== undefined) expect(json.error.code).toBe(row.expect.openaiCode)
  } else {
    expect(json.type).toBe("error")
    expect(typeof json.error?.message).toBe("string")
    if (row.expect.type !== undefined) expect(json.error.type).toBe(row.expect.type)
  }
  if (row.expect.message !== undefined) expect(json.error.message).toBe(row.expect.message)
}

describe("upstream errors by classification", () => {
  for (const row of rows) {
    it(row.name, async () => {
      fakeOf(row.provider).script({ kind: "error", status: row.status, body: row.body, headers: row.headers })
      const reply = await call(row.caller, row.provider)
      headerCheck(reply, row)
      envelopeCheck(reply, row)
      expect(fakeOf(row.provider).requests).toHaveLength(1)
    })
  }

  it("docs/reference/gateway-spec.md §7.3 example exactly: upstream 529 overloaded_error to an OpenAI caller", async () => {
    fakes.anthropic.script({ kind: "error", status: 529, body: anthropicErrorBody(529, "Overloaded", "overloaded_error", "req_011abc") })
    const reply = await call("openai", "anthropic")
    expect(reply.status).toBe(529)
    expect(reply.headers.get("x-gw-error-code")).toBe("overloaded")
    expect(reply.json!.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded", message: "Overloaded" })
  })

  it("a streaming request that fails before any byte gets the plain error response, not a stream", async () => {
    fakes.anthropic.script({ kind: "error", status: 529, body: anthropicErrorBody(529, "Overloaded") })
    const reply = await call("openai", "anthropic", true)
    expect(reply.status).toBe(529)
    expect(reply.headers.get("content-type")).toContain("application/json")
    expect(reply.headers.get("x-gw-error-code")).toBe("overloaded")
    expect(reply.json!.error.message).toBe("Overloaded")
  })
})

describe("Retry-After and the provider header", () => {
  it("an upstream Retry-After given as an HTTP date is re-emitted as integer seconds", async () => {
    const at = new Date(Date.now() + 20_000).toUTCString()
    fakes.openai.script({ kind: "error", status: 429, body: openAiErrorBody(429), headers: { "retry-after": at } })
    const reply = await call("openai", "openai")
    expect(reply.status).toBe(429)
    const value = reply.headers.get("retry-after")
    expect(value).toMatch(/^\d+$/)
    expect(Number(value)).toBeGreaterThan(0)
    expect(Number(value)).toBeLessThanOrEqual(21)
  })

  it("the openai SDK sees a RateLimitError whose headers carry Retry-After", async () => {
    fakes.openai.script({ kind: "error", status: 429, body: openAiErrorBody(429), headers: { "retry-after": "9" } })
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "k", maxRetries: 0 })
    const error = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("retry-after")).toBe("9")
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("x-gw-error-code")).toBe("rate_limit")
  })

  it("the anthropic SDK sees an overloaded 529 as an APIError with status 529", async () => {
    fakes.anthropic.script({ kind: "error", status: 529, body: anthropicErrorBody(529, "Overloaded") })
    const client = new Anthropic({ baseURL: gw.url, apiKey: "k", maxRetries: 0 })
    const error = await client.messages.create({ model: "claude-e2e-model", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.APIError)
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(529)
  })
})

describe("the Anthropic SDK's err.requestID", () => {
  const anthropicClient = () => new Anthropic({ baseURL: gw.url, apiKey: "k", maxRetries: 0 })
  const idsOf = (error: unknown) => {
    expect(error).toBeInstanceOf(Anthropic.APIError)
    const e = error as InstanceType<typeof Anthropic.APIError>
    return { requestID: e.requestID, header: e.headers?.get("x-request-id"), body: (e.error as { request_id?: string }).request_id }
  }

  it("an upstream error translated for an Anthropic caller: err.requestID and the body's request_id are the x-request-id", async () => {
    fakes.openai.script({ kind: "error", status: 429, body: openAiErrorBody(429) })
    const error = await anthropicClient().messages.create({ model: "gpt-4o", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    const ids = idsOf(error)
    expect(ids.header).toMatch(/\S/)
    expect(ids).toEqual({ requestID: ids.header, header: ids.header, body: ids.header })
  })

  it("a gateway error (unknown model) carries the caller's own x-request-id as err.requestID and request_id", async () => {
    const error = await anthropicClient().messages
      .create({ model: "no-such-model", max_tokens: 5, messages: [{ role: "user", content: "x" }] }, { headers: { "x-request-id": "caller-req-42" } })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.NotFoundError)
    expect(idsOf(error)).toEqual({ requestID: "caller-req-42", header: "caller-req-42", body: "caller-req-42" })
  })

  it("an error of the edge itself (no such route) in the Anthropic envelope carries request-id and request_id", async () => {
    const response = await fetch(`${gw.url}/v1/messages/no-such-route`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(response.status).toBe(404)
    const id = response.headers.get("x-request-id")
    expect(id).toMatch(/\S/)
    expect(response.headers.get("request-id")).toBe(id)
    expect(((await response.json()) as { type: string; request_id?: string })).toMatchObject({ type: "error", request_id: id })
  })

  it("a completions-style error keeps its OpenAI shape: no request_id field, no request-id header", async () => {
    fakes.anthropic.script({ kind: "error", status: 429, body: anthropicErrorBody(429, "slow down", "rate_limit_error", "req_upstream_1") })
    const translated = await call("openai", "anthropic")
    const unknown = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "no-such-model", messages: [] }) })
    const gateway = { status: unknown.status, headers: unknown.headers, json: (await unknown.json()) as Json }
    expect([translated.status, gateway.status]).toEqual([429, 404])
    for (const answer of [translated, gateway]) {
      expect(answer.headers.get("request-id")).toBeNull()
      expect(answer.json).not.toHaveProperty("request_id")
    }
  })
})

describe("an Azure provider's errors", () => {
  let azureUp: FakeUpstream
  let azureGw: RunningGateway
  beforeAll(async () => {
    azureUp = await startFakeUpstream({ kind: "azure" })
    azureGw = await startGateway({
      providers: { azure: { base_url: azureUp.url, models: ["my-deployment"], api_version: "2024-10-21", credential: "none" } },
      routing: { retry: { max_retries: 0 } }
    })
  })
  afterAll(async () => {
    await azureGw.close()
    await azureUp.close()
  })

  it("an Azure 429 reaches an OpenAI caller verbatim with x-gw-upstream-provider azure and its Retry-After", async () => {
    const body = openAiErrorBody(429, "Requests to the ChatCompletions_Create Operation have exceeded call rate limit.", "requests", "429")
    azureUp.script({ kind: "error", status: 429, body, headers: { "retry-after": "4" } })
    const res = await fetch(`${azureGw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "my-deployment", messages: [{ role: "user", content: "x" }] })
    })
    expect(res.status).toBe(429)
    expect(res.headers.get("x-gw-error-code")).toBe("rate_limit")
    expect(res.headers.get("x-gw-upstream-provider")).toBe("azure")
    expect(res.headers.get("retry-after")).toBe("4")
    expect(await res.text()).toBe(JSON.stringify(body))
  })

  it("an Azure 400 content_filter reaches an Anthropic caller as invalid_request_error, classified content_policy", async () => {
    const body = openAiErrorBody(400, "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", "invalid_request_error", "content_filter")
    azureUp.script({ kind: "error", status: 400, body })
    const res = await fetch(`${azureGw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "my-deployment", max_tokens: 5, messages: [{ role: "user", content: "x" }] })
    })
    const json = (await res.json()) as Json
    expect(res.status).toBe(400)
    expect(res.headers.get("x-gw-error-code")).toBe("content_policy")
    expect(res.headers.get("x-gw-upstream-provider")).toBe("azure")
    expect(json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } })
  })
})

// ---------------------------------------------------------------------------
// 5xx: 502 with the body withheld
// ---------------------------------------------------------------------------

describe("upstream 5xx", () => {
  const SECRET = "internal-db-host-10.0.0.7-password-hunter2"
  const cases: Array<{ name: string; provider: Family; caller: Family; status: number; body: object }> = [
    { name: "OpenAI 500 to an OpenAI caller", provider: "openai", caller: "openai", status: 500, body: openAiErrorBody(500, `crash at ${SECRET}`) },
    { name: "OpenAI 502 to an OpenAI caller", provider: "openai", caller: "openai", status: 502, body: openAiErrorBody(502, `bad gateway ${SECRET}`) },
    { name: "OpenAI 503 (not overloaded) to an OpenAI caller", provider: "openai", caller: "openai", status: 503, body: openAiErrorBody(503, `service unavailable ${SECRET}`, "server_error") },
    { name: "Anthropic 500 to an Anthropic caller", provider: "anthropic", caller: "anthropic", status: 500, body: anthropicErrorBody(500, `stack trace ${SECRET}`) },
    { name: "Anthropic 500 to an OpenAI caller", provider: "anthropic", caller: "openai", status: 500, body: anthropicErrorBody(500, `stack trace ${SECRET}`) },
    { name: "OpenAI 502 to an Anthropic caller", provider: "openai", caller: "anthropic", status: 502, body: openAiErrorBody(502, `bad gateway ${SECRET}`) }
  ]
  for (const c of cases) {
    it(`${c.name} becomes 502 upstream, the upstream body withheld`, async () => {
      fakeOf(c.provider).script({ kind: "error", status: c.status, body: c.body })
      const reply = await call(c.caller, c.provider)
      expect(reply.status).toBe(502)
      expect(reply.headers.get("x-gw-error-code")).toBe("upstream")
      expect(reply.headers.get("x-gw-upstream-provider")).toBe(c.provider)
      expect(reply.headers.get("retry-after")).toBeNull()
      expect(reply.text).not.toContain(SECRET)
      expect(JSON.stringify([...reply.headers])).not.toContain(SECRET)
      expect(reply.json!.error.message).toBe(`provider returned status ${c.status}`)
      if (c.caller === "openai") expect(reply.json!.error).toMatchObject({ type: "api_error", code: "upstream_error" })
      else expect(reply.json).toMatchObject({ type: "error", error: { type: "api_error" } })
    })
  }

  it("the redacted message never reaches the gateway's log lines either", async () => {
    fakes.openai.script({ kind: "error", status: 500, body: openAiErrorBody(500, `crash at ${SECRET}`) })
    await call("openai", "openai")
    expect(JSON.stringify(gw.logs)).not.toContain(SECRET)
  })

  it("the openai SDK sees a 502 InternalServerError", async () => {
    fakes.openai.script({ kind: "error", status: 500, body: openAiErrorBody(500, `crash at ${SECRET}`) })
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "k", maxRetries: 0 })
    const error = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.InternalServerError)
    expect((error as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(502)
    expect(String((error as Error).message)).not.toContain(SECRET)
  })

  it("the anthropic SDK sees a 502 InternalServerError", async () => {
    fakes.anthropic.script({ kind: "error", status: 500, body: anthropicErrorBody(500, `stack trace ${SECRET}`) })
    const client = new Anthropic({ baseURL: gw.url, apiKey: "k", maxRetries: 0 })
    const error = await client.messages.create({ model: "claude-e2e-model", max_tokens: 5, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.InternalServerError)
    expect((error as InstanceType<typeof Anthropic.InternalServerError>).status).toBe(502)
    expect(String((error as Error).message)).not.toContain(SECRET)
  })
})

// ---------------------------------------------------------------------------
// Unrecognized upstream error bodies
// ---------------------------------------------------------------------------

describe("empty and malformed upstream error bodies", () => {
  const cases: Array<{ name: string; provider: Family; caller: Family; status: number; body: string; code: string }> = [
    { name: "an empty 429 body from OpenAI", provider: "openai", caller: "openai", status: 429, body: "", code: "rate_limit" },
    { name: "a malformed JSON 400 body from OpenAI", provider: "openai", caller: "openai", status: 400, body: '{"error": {"message": "trunc', code: "bad_request" },
    { name: "an empty 401 body from Anthropic", provider: "anthropic", caller: "anthropic", status: 401, body: "", code: "auth" },
    { name: "an HTML 403 body from Anthropic to an OpenAI caller", provider: "anthropic", caller: "openai", status: 403, body: "<html><body>Forbidden</body></html>", code: "forbidden" },
    { name: "an unknown JSON shape from OpenAI to an Anthropic caller", provider: "openai", caller: "anthropic", status: 400, body: '{"detail":"weird shape"}', code: "bad_request" },
    { name: "a JSON null body from Anthropic", provider: "anthropic", caller: "anthropic", status: 404, body: "null", code: "model_not_found" }
  ]
  for (const c of cases) {
    it(`${c.name} gives a generic body in the caller's envelope, classification header still set`, async () => {
      fakeOf(c.provider).script({ kind: "error", status: c.status, body: c.body })
      const reply = await call(c.caller, c.provider)
      expect(reply.status).toBe(c.status)
      expect(reply.headers.get("x-gw-error-code")).toBe(c.code)
      expect(reply.headers.get("x-gw-upstream-provider")).toBe(c.provider)
      expect(reply.json, reply.text).toBeDefined()
      expect(typeof reply.json!.error?.message).toBe("string")
      expect(reply.json!.error.message.length).toBeGreaterThan(0)
      if (c.caller === "anthropic") expect(reply.json!.type).toBe("error")
      else expect(reply.json).not.toHaveProperty("type")
      if (c.body !== "" && c.body !== "null") expect(reply.text).not.toContain(c.body)
    })
  }
})
