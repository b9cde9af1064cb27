/**
 * Gemini (`kind = "gemini"`) as a real provider: callers of Chat Completions,
 * Messages and the Responses API, through the official SDKs, reach a fake
 * Gemini API that checks the body like the real one (unknown fields and schema
 * keywords refused, function calls sent back without their thought signature
 * refused). Each test checks what the SDK parsed and what reached Gemini.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import type { RecordedRequest } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

const GEMINI_KEY = "gemini-configured-key-1234"
const MODEL = "gemini-2.5-flash"

const { fakes, gateway: gw } = gatewayWithFakes(
  { gemini: { kind: "gemini", apiKey: GEMINI_KEY } },
  (fakes) => ({
    providers: {
      gemini: { base_url: fakes.gemini.url, models: [MODEL, "text-embedding-004"], credential: "env::E2E_GEMINI_KEY" },
      "gemini-badkey": { kind: "gemini", base_url: fakes.gemini.url, models: ["gemini-wrong-key"], credential: "env::E2E_GEMINI_BAD" }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  { E2E_GEMINI_KEY: GEMINI_KEY, E2E_GEMINI_BAD: "not-the-key" }
)

/** Callers that bring no key: the configured credential is what Gemini gets. */
const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })

type Json = Record<string, any>
const sent = (index = -1): RecordedRequest => fakes.gemini.requests.at(index)!
const bodyOf = (rec: RecordedRequest): Json => rec.json as Json

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }
  }
}

describe("Gemini from an OpenAI Chat Completions caller", () => {
  it("answers a chat: generateContent at the model's URL with x-goog-api-key, system prompt as systemInstruction, usage mapped", async () => {
    const completion = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello there" }]
    })
    expect(completion.choices[0].message.content).toBe("echo: hello there")
    expect(completion.choices[0].finish_reason).toBe("stop")
    expect(completion.usage?.completion_tokens).toBe(3)
    const rec = sent()
    expect(rec.path).toBe(`/v1beta/models/${MODEL}:generateContent`)
    expect(rec.headers["x-goog-api-key"]).toBe(GEMINI_KEY)
    expect(rec.headers.authorization).toBeUndefined()
    expect(bodyOf(rec).systemInstruction).toEqual({ parts: [{ text: "Be brief." }] })
    expect(bodyOf(rec).contents).toEqual([{ role: "user", parts: [{ text: "hello there" }] }])
  })

  it("streams: streamGenerateContent?alt=sse, deltas in order, finish and usage at the end", async () => {
    const stream = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "one two three" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
    }
    expect(text).toBe("echo: one two three")
    expect(finish).toBe("stop")
    expect(usage?.completion_tokens).toBe(4)
    expect(sent().path).toBe(`/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`)
  })
})

describe("Gemini tools, with thought signatures kept across turns", () => {
  it("an OpenAI caller's tool call goes back with its thoughtSignature (Gemini 3 refuses it otherwise), the result named after its function", async () => {
    const client = openai()
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "use tool for the weather" }]
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] })
    const call = first.choices[0].message.tool_calls?.[0]
    expect(first.choices[0].finish_reason).toBe("tool_calls")
    expect(call?.type === "function" && call.function.name).toBe("get_weather")
    expect(call?.type === "function" && JSON.parse(call.function.arguments)).toEqual({ city: "Paris" })
    const issued = bodyOf(sent()).tools[0].functionDeclarations[0]
    // additionalProperties: false is left out (Gemini refuses the keyword; it changes nothing it generates).
    expect(issued.parameters).toEqual({ type: "object", properties: { city: { type: "string" } }, required: ["city"] })

    messages.push(first.choices[0].message as OpenAI.ChatCompletionMessageParam, { role: "tool", tool_call_id: call!.id, content: "sunny, 21C" })
    const second = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] })
    expect(second.choices[0].message.content).toBe("Hello from fake-gemini")
    const contents = bodyOf(sent()).contents
    expect(contents[1].role).toBe("model")
    expect(contents[1].parts[0].functionCall).toEqual({ name: "get_weather", args: { city: "Paris" } })
    expect(typeof contents[1].parts[0].thoughtSignature).toBe("string")
    expect(contents[2]).toEqual({ role: "user", parts: [{ functionResponse: { name: "get_weather", response: { content: "sunny, 21C" } } }] })
  })

  it("an Anthropic caller's tool_use id is valid for Messages and brings the signature back", async () => {
    const client = anthropic()
    const tools: Array<Anthropic.Tool> = [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }]
    const first = await client.messages.create({ model: MODEL, max_tokens: 100, tools, messages: [{ role: "user", content: "use tool please" }] })
    const use = first.content.find((block) => block.type === "tool_use")
    expect(first.stop_reason).toBe("tool_use")
    expect(use?.type === "tool_use" && use.id).toMatch(/^[a-zA-Z0-9_-]+$/)
    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      tools,
      messages: [
        { role: "user", content: "use tool please" },
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use!.type === "tool_use" ? use!.id : "", content: '{"sky":"clear"}' }] }
      ]
    })
    expect(second.stop_reason).toBe("end_turn")
    const contents = bodyOf(sent()).contents
    expect(contents[2].parts[0].functionResponse).toEqual({ name: "get_weather", response: { sky: "clear" } })
  })

  it("streams a tool call to an OpenAI caller as one call with its arguments", async () => {
    const stream = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "use tool" }], tools: [WEATHER_TOOL], stream: true })
    let args = ""
    let name: string | undefined
    let finish: string | null = null
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name ??= call.function?.name
        args += call.function?.arguments ?? ""
      }
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(name).toBe("get_weather")
    expect(JSON.parse(args)).toEqual({ city: "Paris" })
    expect(finish).toBe("tool_calls")
  })

  it("tool choice: required is mode ANY, a named tool ANY with allowedFunctionNames, none is NONE; parallel_tool_calls=false is reported dropped", async () => {
    const client = openai()
    const base = { model: MODEL, messages: [{ role: "user" as const, content: "hi" }], tools: [WEATHER_TOOL] }
    await client.chat.completions.create({ ...base, tool_choice: "required" })
    expect(bodyOf(sent()).toolConfig).toEqual({ functionCallingConfig: { mode: "ANY" } })
    await client.chat.completions.create({ ...base, tool_choice: { type: "function", function: { name: "get_weather" } } })
    expect(bodyOf(sent()).toolConfig).toEqual({ functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } })
    const none = await client.chat.completions.create({ ...base, tool_choice: "none", parallel_tool_calls: false }).withResponse()
    expect(bodyOf(sent()).toolConfig).toEqual({ functionCallingConfig: { mode: "NONE" } })
    expect(none.data.choices[0].message.content).toBe("echo: hi")
    expect(none.response.headers.get("x-gw-dropped-params")).toContain("parallel_tool_calls")
  })
})

describe("Gemini schemas, structured output, images, thinking, stop sequences", () => {
  it("a tool schema outside Gemini's subset is adapted ($ref inlined, nullable types, const) and what changes its meaning is reported", async () => {
    const response = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "hi" }],
      tools: [{
        type: "function",
        function: {
          name: "book",
          parameters: {
            $schema: "https://json-schema.org/draft/2020-12/schema",
            type: "object",
            $defs: { day: { type: "string", format: "date" } },
            properties: {
              day: { $ref: "#/$defs/day" },
              note: { type: ["string", "null"] },
              kind: { const: "table" },
              guests: { type: "integer", exclusiveMinimum: 0 },
              extra: { type: "object", additionalProperties: { type: "string" } }
            },
            allOf: [{ required: ["day"] }]
          }
        }
      }]
    }).withResponse()
    expect(response.data.choices[0].message.content).toBe("echo: hi")
    const parameters = bodyOf(sent()).tools[0].functionDeclarations[0].parameters
    expect(parameters).toEqual({
      type: "object",
      properties: {
        day: { type: "string", format: "date" },
        note: { type: "string", nullable: true },
        kind: { enum: ["table"] },
        guests: { type: "integer" },
        extra: { type: "object" }
      }
    })
    const dropped = response.response.headers.get("x-gw-dropped-params")?.split(",").map((s) => s.trim())
    expect(dropped).toEqual(expect.arrayContaining(["tools[].parameters.allOf", "tools[].parameters.exclusiveMinimum", "tools[].parameters.additionalProperties"]))
  })

  it("response_format json_schema becomes responseMimeType and responseSchema; the answer parses", async () => {
    const completion = await openai().chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "give json" }],
      response_format: {
        type: "json_schema",
        json_schema: { name: "echo", strict: true, schema: { type: "object", properties: { echo: { type: "string" } }, required: ["echo"], additionalProperties: false } }
      }
    })
    expect(JSON.parse(completion.choices[0].message.content ?? "")).toEqual({ echo: "give json" })
    expect(bodyOf(sent()).generationConfig).toMatchObject({
      responseMimeType: "application/json",
      responseSchema: { type: "object", properties: { echo: { type: "string" } }, required: ["echo"] }
    })
  })

  it("images: a data URL becomes inlineData, an https URL fileData (nothing fetched)", async () => {
    await openai().chat.completions.create({
      model: MODEL,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "what is this" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://example.invalid/cat.jpg" } }
        ]
      }]
    })
    expect(bodyOf(sent()).contents[0].parts).toEqual([
      { text: "what is this" },
      { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
      { fileData: { mimeType: "image/jpeg", fileUri: "https://example.invalid/cat.jpg" } }
    ])
  })

  it("reasoning_effort asks Gemini to think; thinking tokens count as reasoning tokens, the thought text is not the answer", async () => {
    const completion = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "think" }], reasoning_effort: "low" })
    expect(bodyOf(sent()).generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024, includeThoughts: true })
    expect(completion.choices[0].message.content).toBe("echo: think")
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(4)
    expect(completion.usage?.completion_tokens).toBe(2 + 4)
  })

  it("a Responses caller gets the thinking as a reasoning item whose signature returns to Gemini on the next turn", async () => {
    const client = openai()
    const first = await client.responses.create({ model: MODEL, input: "think", reasoning: { effort: "low" }, include: ["reasoning.encrypted_content"] })
    const reasoning = first.output.filter((item) => item.type === "reasoning")
    expect(reasoning.length).toBeGreaterThan(0)
    expect(first.output_text).toBe("echo: think")
    await client.responses.create({
      model: MODEL,
      input: [{ role: "user", content: "think" }, ...(first.output as Array<OpenAI.Responses.ResponseInputItem>), { role: "user", content: "again" }]
    })
    const model = bodyOf(sent()).contents[1]
    expect(model.role).toBe("model")
    expect(model.parts.some((part: Json) => typeof part.thoughtSignature === "string" && part.text === "echo: think")).toBe(true)
  })

  it("stop sequences reach Gemini; max_tokens becomes maxOutputTokens and a cut answer finishes with length", async () => {
    const stopped = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "alpha beta gamma" }], stop: [" gamma"] })
    expect(stopped.choices[0].message.content).toBe("echo: alpha beta")
    expect(bodyOf(sent()).generationConfig.stopSequences).toEqual([" gamma"])
    const cut = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "alpha beta gamma" }], max_tokens: 2 })
    expect(cut.choices[0].finish_reason).toBe("length")
    expect(bodyOf(sent()).generationConfig.maxOutputTokens).toBe(2)
  })
})

describe("Gemini safety and errors", () => {
  const blockedCandidate = { candidates: [{ content: { parts: [], role: "model" }, finishReason: "SAFETY", index: 0 }], modelVersion: MODEL, responseId: "r1" }
  const blockedPrompt = { promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, modelVersion: MODEL, responseId: "r2" }
  const sse = (body: unknown) => ({ kind: "sse" as const, events: [`data: ${JSON.stringify(body)}\r\n\r\n`] })

  it.each([false, true])("a blocked prompt or a candidate blocked with nothing in it is a 400 content_policy in the caller's envelope (stream %s)", async (stream) => {
    const script = (body: unknown) => fakes.gemini.script(stream ? sse(body) : { kind: "json", body })
    script(blockedCandidate)
    const openAiError = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], stream }).catch((e: unknown) => e)
    expect(openAiError).toBeInstanceOf(OpenAI.APIError)
    const asOpenAi = openAiError as InstanceType<typeof OpenAI.APIError>
    expect([asOpenAi.status, asOpenAi.headers?.get("x-gw-error-code"), asOpenAi.code]).toEqual([400, "content_policy", "content_policy_violation"])
    expect(asOpenAi.message).toContain("blocked the answer (SAFETY)")
    script(blockedPrompt)
    const anthropicError = await anthropic().messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "x" }], stream }).catch((e: unknown) => e)
    expect(anthropicError).toBeInstanceOf(Anthropic.APIError)
    const asAnthropic = anthropicError as InstanceType<typeof Anthropic.APIError>
    expect([asAnthropic.status, asAnthropic.headers?.get("x-gw-error-code")]).toEqual([400, "content_policy"])
    expect((asAnthropic.error as { error?: { type?: string } }).error?.type).toBe("invalid_request_error")
    expect(asAnthropic.message).toContain("blocked the prompt (PROHIBITED_CONTENT)")
  })

  it("a block after content in a stream is the answer's finish: content_filter (OpenAI), refusal (Anthropic)", async () => {
    const frames = () => ({
      kind: "sse" as const,
      events: [
        `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: "Some of it" }], role: "model" }, index: 0 }], modelVersion: MODEL, responseId: "r3" })}\r\n\r\n`,
        `data: ${JSON.stringify({ ...blockedCandidate, candidates: [{ ...blockedCandidate.candidates[0], finishReason: "SPII" }] })}\r\n\r\n`
      ]
    })
    fakes.gemini.script(frames())
    const completion = await openai().chat.completions.stream({ model: MODEL, messages: [{ role: "user", content: "x" }], stream: true }).finalChatCompletion()
    expect([completion.choices[0].message.content, completion.choices[0].finish_reason]).toEqual(["Some of it", "content_filter"])
    fakes.gemini.script(frames())
    const message = await anthropic().messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "x" }] }).finalMessage()
    expect(message.stop_reason).toBe("refusal")
  })

  it.each([
    [429, "RESOURCE_EXHAUSTED", 429, "rate_limit"],
    [503, "UNAVAILABLE", 529, "overloaded"],
    [403, "PERMISSION_DENIED", 403, "forbidden"],
    [400, "INVALID_ARGUMENT", 400, "bad_request"],
    [500, "INTERNAL", 502, "upstream"]
  ])("a Gemini %i %s is answered %i with x-gw-error-code %s", async (status, _name, callerStatus, code) => {
    fakes.gemini.script({ kind: "error", status })
    const error = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(callerStatus)
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get("x-gw-error-code")).toBe(code)
  })

  it("a wrong Gemini key (400 API_KEY_INVALID) is classified auth, and the key never shows in the answer", async () => {
    const error = await openai().chat.completions.create({ model: "gemini-wrong-key", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e)
    const apiError = error as InstanceType<typeof OpenAI.APIError>
    expect(apiError.headers?.get("x-gw-error-code")).toBe("auth")
    expect(JSON.stringify(apiError.error)).not.toContain("not-the-key")
  })

  it("an error event in the stream before any content fails the attempt with its class; after content it ends the stream with an error frame", async () => {
    fakes.gemini.script({ kind: "sse", events: ['data: {"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}\r\n\r\n'] })
    const error = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], stream: true }).catch((e: unknown) => e)
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get("x-gw-error-code")).toBe("rate_limit")

    fakes.gemini.script({
      kind: "sse",
      events: [
        `data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: "partial" }], role: "model" }, index: 0 }], responseId: "r", modelVersion: MODEL })}\r\n\r\n`
      ],
      thenError: "close"
    })
    const stream = await anthropic().messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "x" }], stream: true })
    let text = ""
    const failure = await (async () => {
      for await (const event of stream) if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text
    })().catch((e: unknown) => e)
    expect(text).toBe("partial")
    expect(failure).toBeInstanceOf(Anthropic.APIError)
  })
})

describe("Gemini from Anthropic and Responses callers", () => {
  it("an Anthropic caller gets a message, streamed and not", async () => {
    const message = await anthropic().messages.create({ model: MODEL, max_tokens: 50, system: "sys", messages: [{ role: "user", content: "hey you" }] })
    expect(message.content).toEqual([{ type: "text", text: "echo: hey you", citations: null }].map(({ citations: _c, ...rest }) => rest))
    expect(bodyOf(sent()).systemInstruction).toEqual({ parts: [{ text: "sys" }] })
    expect(bodyOf(sent()).generationConfig.maxOutputTokens).toBe(50)
    const stream = anthropic().messages.stream({ model: MODEL, max_tokens: 50, messages: [{ role: "user", content: "hey you" }] })
    const final = await stream.finalMessage()
    expect(final.content[0].type === "text" && final.content[0].text).toBe("echo: hey you")
    expect(final.stop_reason).toBe("end_turn")
  })

  it("a Responses caller gets a response, streamed and not", async () => {
    const response = await openai().responses.create({ model: MODEL, input: "hey you", instructions: "sys" })
    expect(response.output_text).toBe("echo: hey you")
    expect(bodyOf(sent()).systemInstruction).toEqual({ parts: [{ text: "sys" }] })
    const stream = openai().responses.stream({ model: MODEL, input: "hey you" })
    const final = await stream.finalResponse()
    expect(final.output_text).toBe("echo: hey you")
    expect(final.status).toBe("completed")
  })
})

describe("Gemini embeddings and token counting", () => {
  it("/v1/embeddings goes to batchEmbedContents, one request per input, and comes back as OpenAI's list (floats and base64)", async () => {
    const client = openai()
    const result = await client.embeddings.create({ model: "text-embedding-004", input: ["alpha", "beta"], dimensions: 8, encoding_format: "float" })
    expect(result.data.map((item) => [item.index, item.embedding.length])).toEqual([[0, 8], [1, 8]])
    const rec = sent()
    expect(rec.path).toBe("/v1beta/models/text-embedding-004:batchEmbedContents")
    expect(rec.headers["x-goog-api-key"]).toBe(GEMINI_KEY)
    expect(bodyOf(rec).requests).toEqual([
      { model: "models/text-embedding-004", content: { parts: [{ text: "alpha" }] }, outputDimensionality: 8 },
      { model: "models/text-embedding-004", content: { parts: [{ text: "beta" }] }, outputDimensionality: 8 }
    ])
    // The SDK asks for base64 by default and decodes it: the same numbers.
    const decoded = await client.embeddings.create({ model: "text-embedding-004", input: "alpha", dimensions: 8 })
    expect(decoded.data[0].embedding).toEqual(result.data[0].embedding)
  })

  it("token arrays cannot be embedded by Gemini: 400 naming input, nothing sent", async () => {
    const error = await openai().embeddings.create({ model: "text-embedding-004", input: [[1, 2, 3]] }).catch((e: unknown) => e)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400)
    expect(JSON.stringify((error as InstanceType<typeof OpenAI.APIError>).error)).toContain("input")
    expect(fakes.gemini.requests).toHaveLength(0)
  })

  it("/v1/messages/count_tokens goes to countTokens with the translated request and answers input_tokens", async () => {
    const counted = await anthropic().messages.countTokens({ model: MODEL, system: "sys", messages: [{ role: "user", content: "count me" }] })
    expect(counted.input_tokens).toBeGreaterThan(0)
    const rec = sent()
    expect(rec.path).toBe(`/v1beta/models/${MODEL}:countTokens`)
    expect(bodyOf(rec)).toEqual({
      generateContentRequest: {
        model: `models/${MODEL}`,
        contents: [{ role: "user", parts: [{ text: "count me" }] }],
        systemInstruction: { parts: [{ text: "sys" }] }
      }
    })
  })
})

describe("Vertex AI's Gemini (kind = \"vertex\")", () => {
  const vertexFake = gatewayWithFakes(
    { vertex: { kind: "gemini", apiKey: "ya29.vertex-token" } },
    (fakes) => ({
      providers: {
        vertex: { base_url: fakes.vertex.url, project: "my-proj", location: "europe-west4", models: ["gemini-2.5-pro"], credential: "env::E2E_VERTEX_TOKEN" }
      },
      routing: { retry: { max_retries: 0 } }
    }),
    { E2E_VERTEX_TOKEN: "ya29.vertex-token" }
  )

  it("calls the model under the project and location with the bearer token, streamed and not", async () => {
    const client = new OpenAI({ baseURL: `${vertexFake.gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
    const completion = await client.chat.completions.create({ model: "gemini-2.5-pro", messages: [{ role: "user", content: "hi vertex" }] })
    expect(completion.choices[0].message.content).toBe("echo: hi vertex")
    const rec = vertexFake.fakes.vertex.lastRequest()!
    expect(rec.path).toBe("/v1/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent")
    expect(rec.headers.authorization).toBe("Bearer ya29.vertex-token")
    const stream = await client.chat.completions.create({ model: "gemini-2.5-pro", messages: [{ role: "user", content: "hi again" }], stream: true })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("echo: hi again")
    expect(vertexFake.fakes.vertex.lastRequest()!.path).toBe("/v1/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
  })
})
