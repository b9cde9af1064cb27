/**
 * The platform auth exchange in front of the running gateway (`[auth]`,
 * docs/reference/gateway-spec.md §5), against a fake exchange server: refusals in the caller's own
 * format before anything goes upstream, one exchange per key and project,
 * the exchange down → 503 with retry headers, the token as the credential of
 * the request's GenAI export, and neither key nor token in a log line.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { startFakeExchange } from "../fixtures/fake-exchange.ts"
import type { FakeExchange } from "../fixtures/fake-exchange.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startOtlpReceiver } from "../fixtures/otlp-receiver.ts"
import type { OtlpReceiver } from "../fixtures/otlp-receiver.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const KEY = "pk-platform-key-0123456789abcdef"
let upstream: FakeUpstream
let exchange: FakeExchange
let collector: OtlpReceiver
let gateway: RunningGateway

beforeAll(async () => {
  ;[upstream, exchange, collector] = await Promise.all([
    startFakeUpstream({ kind: "openai" }),
    startFakeExchange({ keys: { [KEY]: ["proj-a", "proj-b", "proj-c", "proj-d"] } }),
    startOtlpReceiver()
  ])
  gateway = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, models: ["gpt-4o"], credential: "none" } },
    telemetry: { enabled: false },
    genai_telemetry: { enabled: true, otlp_endpoint: collector.url, metrics_enabled: false, otlp_bearer_token: "static-token-never-used-with-auth" },
    auth: { enabled: true, exchange_url: exchange.url, exchange_timeout_ms: 300 }
  })
})
afterAll(async () => {
  await gateway.close()
  await Promise.all([upstream.close(), exchange.close(), collector.close()])
})
beforeEach(() => {
  upstream.reset()
  exchange.answer(undefined)
})

const openai = (headers: Record<string, string>) =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "provider-key-unused", maxRetries: 0, defaultHeaders: headers })
const ask = (headers: Record<string, string>) =>
  openai(headers).chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hello" }] }).withResponse()

describe("the platform exchange", () => {
  it("no platform key: 401 auth in the OpenAI format, nothing sent upstream", async () => {
    const refused = await ask({ "x-gw-project-id": "proj-a" }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError)
    const error = refused as InstanceType<typeof OpenAI.AuthenticationError>
    expect(error.headers.get("x-gw-error-code")).toBe("auth")
    expect(upstream.requests).toHaveLength(0)
  })

  it("a key the exchange rejects: 401; a project it may not use: 403 forbidden, in the Anthropic format", async () => {
    const rejected = await ask({ "x-gw-authorization": "Bearer pk-unknown", "x-gw-project-id": "proj-a" }).catch((error: unknown) => error)
    expect(rejected).toBeInstanceOf(OpenAI.AuthenticationError)
    const client = new Anthropic({ baseURL: gateway.url, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": "proj-z" } })
    const forbidden = await client.messages.create({ model: "gpt-4o", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((error: unknown) => error)
    expect(forbidden).toBeInstanceOf(Anthropic.PermissionDeniedError)
    const error = forbidden as InstanceType<typeof Anthropic.PermissionDeniedError>
    expect(error.headers.get("x-gw-error-code")).toBe("forbidden")
    expect((error.error as { type?: string }).type).toBe("error")
    expect(upstream.requests).toHaveLength(0)
  })

  it("a refused exchange answers a completions-style caller with the table's type and code: authentication_error / invalid_api_key, permission_error / permission_denied", async () => {
    const rejected = await ask({ "x-gw-authorization": "Bearer pk-unknown", "x-gw-project-id": "proj-a" }).catch((error: unknown) => error)
    expect(rejected).toBeInstanceOf(OpenAI.AuthenticationError)
    const auth = rejected as InstanceType<typeof OpenAI.AuthenticationError>
    expect([auth.type, auth.code, auth.headers.get("x-gw-error-code")]).toEqual(["authentication_error", "invalid_api_key", "auth"])
    const forbidden = await ask({ "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": "proj-z" }).catch((error: unknown) => error)
    expect(forbidden).toBeInstanceOf(OpenAI.PermissionDeniedError)
    const denied = forbidden as InstanceType<typeof OpenAI.PermissionDeniedError>
    expect([denied.type, denied.code, denied.headers.get("x-gw-error-code")]).toEqual(["permission_error", "permission_denied", "forbidden"])
    expect(upstream.requests).toHaveLength(0)
  })

  it("a good key: answered, with one exchange for many requests (concurrent ones included)", async () => {
    const before = exchange.requests.length
    const headers = { "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": "proj-b" }
    const answers = await Promise.all(Array.from({ length: 10 }, () => ask(headers)))
    for (const answer of answers) expect(answer.response.status).toBe(200)
    await ask(headers)
    expect(exchange.requests.length - before).toBe(1)
    expect(exchange.requests.at(-1)).toMatchObject({ authorization: `Bearer ${KEY}`, body: { project_id: "proj-b" } })
  })

  it("the exchange down or too slow: 503 with the retry headers", async () => {
    exchange.answer({ status: 503 })
    const down = await ask({ "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": "proj-down" }).catch((error: unknown) => error)
    expect(down).toBeInstanceOf(OpenAI.InternalServerError)
    const error = down as InstanceType<typeof OpenAI.InternalServerError>
    expect(error.status).toBe(503)
    // A gateway-side failure (docs/reference/gateway-spec.md §7.4): no x-gw-error-code, the code in the body, the retry headers.
    expect(error.headers.get("x-gw-error-code")).toBeNull()
    expect((error.error as { code?: string }).code).toBe("INFRA_UNAVAILABLE")
    expect(error.headers.get("x-should-retry")).toBe("true")
    expect(error.headers.get("retry-after")).toBe("1")
    expect(Number(error.headers.get("retry-after-ms"))).toBeGreaterThan(0)
    exchange.answer({ delayMs: 1000 })
    const slow = await ask({ "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": "proj-slow" }).catch((error: unknown) => error)
    expect((slow as { status?: number }).status).toBe(503)
    expect(upstream.requests).toHaveLength(0)
  })
})

describe("the token as the GenAI export credential", () => {
  it("each project's calls go out with its own token, never mixed in one export", async () => {
    const ours = (project: unknown) => project === "proj-c" || project === "proj-d"
    for (const project of ["proj-c", "proj-d", "proj-c"]) {
      await ask({ "x-gw-authorization": `Bearer ${KEY}`, "x-gw-project-id": project })
    }
    await collector.waitFor((c) => c.spans().filter((span) => ours(span.attributes["gateway.project.id"])).length >= 3)
    for (const call of collector.calls) {
      const projects = new Set(call.spans.map((span) => span.attributes["gateway.project.id"]))
      expect(projects.size).toBe(1)
      const [project] = projects
      expect(call.metadata.authorization).toMatch(new RegExp(`^Bearer tok-${String(project)}-\\d+$`))
    }
    const projects = collector.spans().map((span) => span.attributes["gateway.project.id"]).filter(ours).sort()
    expect(projects).toEqual(["proj-c", "proj-c", "proj-d"])
  })

  it("neither the platform key nor a token reaches a log line", () => {
    const text = JSON.stringify(gateway.logs)
    expect(text).not.toContain(KEY)
    expect(text).not.toMatch(/tok-proj/)
  })
})
