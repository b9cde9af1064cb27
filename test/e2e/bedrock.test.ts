/**
 * Amazon Bedrock (`kind = "bedrock"`, `auth_type = "sigv4"`) as a real
 * provider: callers of every format reach a fake Bedrock runtime that checks
 * each request's SigV4 signature with an implementation of its own and answers
 * Converse, or ConverseStream in the binary event stream.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { BEDROCK_TEST_CREDENTIALS, bedrockFrame, converseFrames, converseResponse } from "../fixtures/bedrock.ts"
import type { RecordedRequest } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

const MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
const AWS_ENV = {
  AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
  AWS_SESSION_TOKEN: BEDROCK_TEST_CREDENTIALS.sessionToken
}

const { fakes, gateway: gw } = gatewayWithFakes(
  { bedrock: { kind: "bedrock" } },
  (fakes) => ({
    providers: {
      bedrock: { base_url: fakes.bedrock.url, region: "us-east-1", auth_type: "sigv4", models: [MODEL, "meta.llama3-70b-instruct-v1:0"] },
      "bedrock-west": { kind: "bedrock", base_url: fakes.bedrock.url, region: "us-west-2", auth_type: "sigv4", models: ["wrong-region-model"] }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  AWS_ENV
)

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })

type Json = Record<string, any>
const sent = (): RecordedRequest => fakes.bedrock.lastRequest()!
const bodyOf = (rec: RecordedRequest): Json => rec.json as Json

describe("Bedrock Converse from every caller", () => {
  it("a chat goes to /model/{id}/converse signed with SigV4 (the fake checks it), system and limits translated", async () => {
    const completion = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello bedrock" }],
      max_tokens: 50,
      temperature: 0.3
    })
    expect(completion.choices[0].message.content).toBe("echo: hello bedrock")
    expect(completion.choices[0].finish_reason).toBe("stop")
    const rec = sent()
    expect(rec.path).toBe(`/model/${encodeURIComponent(MODEL)}/converse`)
    expect(rec.responseStatus).toBe(200)
    expect(String(rec.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAFAKEBEDROCK00001\/\d{8}\/us-east-1\/bedrock\/aws4_request/)
    expect(JSON.stringify(rec.headers)).not.toContain(BEDROCK_TEST_CREDENTIALS.secretAccessKey)
    expect(bodyOf(rec)).toEqual({
      messages: [{ role: "user", content: [{ text: "hello bedrock" }] }],
      system: [{ text: "Be brief." }],
      inferenceConfig: { maxTokens: 50, temperature: 0.3 }
    })
  })

  it("streams from ConverseStream's binary event stream, to Chat Completions, Messages and Responses callers", async () => {
    const stream = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "one two" }], stream: true, stream_options: { include_usage: true } })
    let text = ""
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      usage = chunk.usage ?? usage
    }
    expect(text).toBe("echo: one two")
    expect(usage?.completion_tokens).toBe(3)
    expect(sent().path).toBe(`/model/${encodeURIComponent(MODEL)}/converse-stream`)
    const message = await anthropic().messages.stream({ model: MODEL, max_tokens: 20, messages: [{ role: "user", content: "three four" }] }).finalMessage()
    expect(message.content[0].type === "text" && message.content[0].text).toBe("echo: three four")
    const response = await openai().responses.stream({ model: MODEL, input: "five six" }).finalResponse()
    expect(response.output_text).toBe("echo: five six")
  })

  it("tools: a tool call and its result round-trip with the toolUseId Bedrock issued", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "use tool now" }]
    const first = await openai().chat.completions.create({ model: MODEL, messages, tools, tool_choice: "required" })
    const call = first.choices[0].message.tool_calls![0]
    expect(call.id).toMatch(/^tooluse_fake/)
    expect(bodyOf(sent()).toolConfig).toEqual({
      tools: [{ toolSpec: { name: "get_weather", inputSchema: { json: tools[0].function.parameters } } }],
      toolChoice: { any: {} }
    })
    messages.push(first.choices[0].message as OpenAI.ChatCompletionMessageParam, { role: "tool", tool_call_id: call.id, content: "sunny" })
    const second = await openai().chat.completions.create({ model: MODEL, messages, tools })
    expect(second.choices[0].finish_reason).toBe("stop")
    expect(bodyOf(sent()).messages.slice(1)).toEqual([
      { role: "assistant", content: [{ toolUse: { toolUseId: call.id, name: "get_weather", input: { city: "Paris" } } }] },
      { role: "user", content: [{ toolResult: { toolUseId: call.id, content: [{ text: "sunny" }] } }] }
    ])
  })

  it("structured output is a forced tool whose input is the JSON answer", async () => {
    const completion = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "json please" }],
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { echo: { type: "string" } } } } }
    })
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual({ echo: "json please" })
    expect(completion.choices[0].finish_reason).toBe("stop")
    expect(bodyOf(sent()).toolConfig.toolChoice).toEqual({ tool: { name: "gw_json_response" } })
  })

  it("reasoning with its signature comes back to a Responses caller and returns to Bedrock as reasoningContent", async () => {
    fakes.bedrock.script({
      kind: "json",
      body: {
        output: { message: { role: "assistant", content: [{ reasoningContent: { reasoningText: { text: "hmm", signature: "sig-bedrock-1" } } }, { text: "done" }] } },
        stopReason: "end_turn",
        usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7, cacheReadInputTokens: 2 }
      }
    })
    const first = await openai().responses.create({ model: MODEL, input: "think", include: ["reasoning.encrypted_content"] })
    expect(first.output_text).toBe("done")
    expect(first.usage?.input_tokens).toBe(5)
    expect(first.usage?.input_tokens_details.cached_tokens).toBe(2)
    await openai().responses.create({ model: MODEL, input: [{ role: "user", content: "think" }, ...(first.output as Array<OpenAI.Responses.ResponseInputItem>), { role: "user", content: "more" }] })
    expect(bodyOf(sent()).messages[1].content[0]).toEqual({ reasoningContent: { reasoningText: { text: "hmm", signature: "sig-bedrock-1" } } })
  })

  it("an image URL that is not s3:// is left out (nothing fetched) and reported in x-gw-dropped-params; inline bytes go as image bytes", async () => {
    const { data, response } = await openai().chat.completions.create({
      model: MODEL,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://example.invalid/a.png" } }
        ]
      }]
    }).withResponse()
    expect(data.choices[0].message.content).toBe("echo: look")
    expect(bodyOf(sent()).messages[0].content).toEqual([{ text: "look" }, { image: { format: "png", source: { bytes: "iVBORw0KGgo=" } } }])
    expect(response.headers.get("x-gw-dropped-params")).toContain("messages[].image_url")
  })
})

describe("Bedrock errors", () => {
  it.each([
    [429, 429, "rate_limit"],
    [503, 529, "overloaded"],
    [403, 403, "forbidden"],
    [400, 400, "bad_request"]
  ])("an HTTP %i (x-amzn-errortype) is the caller's %i classified %s", async (status, callerStatus, code) => {
    fakes.bedrock.script({ kind: "error", status })
    const error = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e) as InstanceType<typeof OpenAI.APIError>
    expect(error.status).toBe(callerStatus)
    expect(error.headers?.get("x-gw-error-code")).toBe(code)
  })

  it("a throttlingException in the event stream before content is rate_limit; a serviceUnavailableException overloaded", async () => {
    for (const [exception, code] of [["throttlingException", "rate_limit"], ["serviceUnavailableException", "overloaded"]] as const) {
      fakes.bedrock.script({
        kind: "custom",
        handle: ({ res }) => {
          res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" })
          res.write(bedrockFrame("messageStart", { role: "assistant" }))
          res.end(bedrockFrame(exception, { message: "slow down" }, "exception"))
        }
      })
      const error = await anthropic().messages.create({ model: MODEL, max_tokens: 5, messages: [{ role: "user", content: "x" }], stream: true }).catch((e: unknown) => e)
      expect((error as InstanceType<typeof Anthropic.APIError>).headers?.get("x-gw-error-code")).toBe(code)
    }
  })

  it.each([false, true])("a guardrail that let nothing through is a 400 content_policy in the caller's envelope, not retried (stream %s)", async (stream) => {
    const plan = { blocks: [], stopReason: "guardrail_intervened", usage: { inputTokens: 3, outputTokens: 0, totalTokens: 3 } }
    fakes.bedrock.reset()
    fakes.bedrock.script(stream
      ? { kind: "custom", handle: ({ res }) => {
        res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" })
        for (const frame of converseFrames(plan)) res.write(frame)
        res.end()
      } }
      : { kind: "json", body: converseResponse(plan) })
    const error = await anthropic().messages.create({ model: MODEL, max_tokens: 5, messages: [{ role: "user", content: "x" }], stream }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.APIError)
    const apiError = error as InstanceType<typeof Anthropic.APIError>
    expect([apiError.status, apiError.headers?.get("x-gw-error-code")]).toEqual([400, "content_policy"])
    expect(apiError.message).toContain("guardrail_intervened")
    expect(fakes.bedrock.requests).toHaveLength(1)
  })

  it("a signature for the wrong region is refused by Bedrock: 403 forbidden", async () => {
    const error = await openai().chat.completions.create({ model: "wrong-region-model", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e) as InstanceType<typeof OpenAI.APIError>
    expect(error.status).toBe(403)
    expect(error.headers?.get("x-gw-error-code")).toBe("forbidden")
    expect(sent().responseStatus).toBe(403)
  })
})

describe("Bedrock passthrough", () => {
  it("/v1/bedrock/* is signed with SigV4 too: the body read whole and signed as sent, the fake checks it", async () => {
    const body = JSON.stringify({ messages: [{ role: "user", content: [{ text: "native call" }] }] })
    const response = await fetch(`${gw.url}/v1/bedrock/model/${encodeURIComponent(MODEL)}/converse`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ output: { message: { content: [{ text: "echo: native call" }] } }, stopReason: "end_turn" })
    const rec = sent()
    expect(rec.responseStatus).toBe(200)
    expect(String(rec.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 /)
    expect(rec.body.toString()).toBe(body)
  })
})

describe("Bedrock prompt caching", () => {
  const cached = {
    max_tokens: 20,
    system: [{ type: "text" as const, text: "A long system prompt.", cache_control: { type: "ephemeral" as const } }],
    tools: [{ name: "lookup", input_schema: { type: "object" as const, properties: { q: { type: "string" } } }, cache_control: { type: "ephemeral" as const } }],
    messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "a long document", cache_control: { type: "ephemeral" as const } }, { type: "text" as const, text: "question" }] }]
  }

  it("an Anthropic caller's cache_control becomes a cachePoint after the marked system text, tool and message block", async () => {
    const { response } = await anthropic().messages.create({ model: MODEL, ...cached }).withResponse()
    const body = bodyOf(sent())
    expect(body.system).toEqual([{ text: "A long system prompt." }, { cachePoint: { type: "default" } }])
    expect(body.toolConfig.tools).toEqual([
      { toolSpec: { name: "lookup", inputSchema: { json: cached.tools[0].input_schema } } },
      { cachePoint: { type: "default" } }
    ])
    expect(body.messages[0].content).toEqual([{ text: "a long document" }, { cachePoint: { type: "default" } }, { text: "question" }])
    expect(response.headers.get("x-gw-dropped-params") ?? "").not.toContain("cache_control")
  })

  it("a model that cannot take a cachePoint gets none, and the markers are reported dropped", async () => {
    const { response } = await anthropic().messages.create({ model: "meta.llama3-70b-instruct-v1:0", ...cached }).withResponse()
    expect(JSON.stringify(bodyOf(sent()))).not.toContain("cachePoint")
    expect(response.headers.get("x-gw-dropped-params")).toContain("messages[].cache_control")
  })
})
