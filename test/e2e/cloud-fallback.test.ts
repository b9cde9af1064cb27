/**
 * A fallback route across the clouds, Bedrock → Gemini → OpenAI, driven by the
 * official SDKs: a 429 from Bedrock (ThrottlingException) and from Gemini
 * (RESOURCE_EXHAUSTED) passes the request on; a stream that breaks before its
 * first translated event fails over too; one that breaks after it ends with the
 * stream's error, unless the route continues broken streams
 * (`on_stream_break = "continue"`): then the next cloud finishes the answer.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { BEDROCK_TEST_CREDENTIALS, bedrockFrame } from "../fixtures/bedrock.ts"
import { geminiFrame, geminiResponse } from "../fixtures/gemini.ts"
import { CONTINUE_PROMPT } from "../../src/pipeline/chat/continuation.ts"
import { gatewayWithFakes } from "./harness.ts"

const { fakes, gateway: gw } = gatewayWithFakes(
  { bedrock: { kind: "bedrock" }, gemini: { kind: "gemini", apiKey: "gemini-key" }, openai: { kind: "openai", apiKey: "openai-key" } },
  (fakes) => ({
    providers: {
      bedrock: { base_url: fakes.bedrock.url, region: BEDROCK_TEST_CREDENTIALS.region, auth_type: "sigv4", models: ["anthropic.claude-3-5-sonnet-20240620-v1:0"] },
      gemini: { base_url: fakes.gemini.url, models: ["gemini-2.5-flash"], credential: "env::FALLBACK_GEMINI_KEY" },
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::FALLBACK_OPENAI_KEY" }
    },
    targets: {
      "claude-bedrock": { model: "bedrock::anthropic.claude-3-5-sonnet-20240620-v1:0" },
      flash: { model: "gemini::gemini-2.5-flash" },
      gpt: { model: "openai::gpt-4o" }
    },
    routes: {
      clouds: { endpoint: "chat", models: ["clouds"], strategy: "fallback", targets: ["claude-bedrock", "flash", "gpt"], retry: { max_retries: 0, backoff_base_ms: 1 } },
      continued: {
        endpoint: "chat",
        models: ["clouds-continued"],
        strategy: "fallback",
        targets: ["claude-bedrock", "flash", "gpt"],
        retry: { max_retries: 0, backoff_base_ms: 1 },
        on_stream_break: "continue"
      }
    }
  }),
  {
    FALLBACK_GEMINI_KEY: "gemini-key",
    FALLBACK_OPENAI_KEY: "openai-key",
    AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
    AWS_SESSION_TOKEN: BEDROCK_TEST_CREDENTIALS.sessionToken
  }
)

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })

describe("fallback route Bedrock → Gemini → OpenAI", () => {
  it("fails over on Bedrock's 429 and Gemini's 429 to OpenAI, each asked once", async () => {
    fakes.bedrock.script({ kind: "error", status: 429 })
    fakes.gemini.script({ kind: "error", status: 429 })
    const { data, response } = await openai().chat.completions.create({ model: "clouds", messages: [{ role: "user", content: "anyone there" }] }).withResponse()
    expect(data.choices[0].message.content).toBe("echo: anyone there")
    expect(response.headers.get("x-gw-upstream-provider")).toBe("openai")
    expect([fakes.bedrock.requests.length, fakes.gemini.requests.length, fakes.openai.requests.length]).toEqual([1, 1, 1])
  })

  it("Bedrock answering first is the answer (the route's first target), for a Messages caller", async () => {
    const message = await anthropic().messages.create({ model: "clouds", max_tokens: 20, messages: [{ role: "user", content: "first try" }] })
    expect(message.content[0].type === "text" && message.content[0].text).toBe("echo: first try")
    expect([fakes.bedrock.requests.length, fakes.gemini.requests.length]).toEqual([1, 0])
  })

  it("a Bedrock stream that breaks before any content fails over to Gemini's stream", async () => {
    fakes.bedrock.script({
      kind: "custom",
      handle: async ({ res }) => {
        res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" })
        res.write(bedrockFrame("messageStart", { role: "assistant" }))
        await new Promise((resolve) => setTimeout(resolve, 20))
        res.socket?.destroy()
      }
    })
    const message = await anthropic().messages.stream({ model: "clouds", max_tokens: 20, messages: [{ role: "user", content: "stream it" }] }).finalMessage()
    expect(message.content[0].type === "text" && message.content[0].text).toBe("echo: stream it")
    expect([fakes.bedrock.requests.length, fakes.gemini.requests.length, fakes.openai.requests.length]).toEqual([1, 1, 0])
  })

  it("a Gemini stream that breaks after its first text ends the caller's stream with an error; OpenAI is not asked", async () => {
    fakes.bedrock.script({ kind: "error", status: 503 })
    fakes.gemini.script({ kind: "sse", events: [geminiFrame(geminiResponse("gemini-2.5-flash", "r", [{ text: "half" }]))], thenError: "close" })
    const stream = await openai().chat.completions.create({ model: "clouds", stream: true, messages: [{ role: "user", content: "x" }] })
    let text = ""
    const failure = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    })().then(() => undefined, (e: unknown) => e)
    expect(text).toBe("half")
    expect(failure).toBeInstanceOf(Error)
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("with on_stream_break = \"continue\", a Bedrock stream that breaks after its first text is finished by Gemini behind one stream", async () => {
    fakes.bedrock.script({
      kind: "custom",
      handle: async ({ res }) => {
        res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" })
        res.write(bedrockFrame("messageStart", { role: "assistant" }))
        res.write(bedrockFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "The quick " } }))
        res.write(bedrockFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "brown " } }))
        await new Promise((resolve) => setTimeout(resolve, 20))
        res.socket?.destroy()
      }
    })
    fakes.gemini.script({
      kind: "sse",
      events: [
        geminiFrame(geminiResponse("gemini-2.5-flash", "r", [{ text: "fox jumps" }])),
        geminiFrame(geminiResponse("gemini-2.5-flash", "r", [{ text: " over the dog." }], "STOP", { promptTokenCount: 30, candidatesTokenCount: 5, totalTokenCount: 35 }))
      ]
    })
    const stream = openai().chat.completions.stream({ model: "clouds-continued", messages: [{ role: "user", content: "tell me" }] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0].message.content).toBe("The quick brown fox jumps over the dog.")
    expect(final.choices[0].finish_reason).toBe("stop")
    // Gemini takes no prefill: the text sent as the model's turn, then the documented continuation message.
    const asked = fakes.gemini.requests.at(-1)!.json as { contents: Array<{ role: string; parts: Array<{ text?: string }> }> }
    expect(asked.contents.slice(-2).map((content) => [content.role, content.parts.map((part) => part.text).join("")])).toEqual([
      ["model", "The quick brown "],
      ["user", CONTINUE_PROMPT]
    ])
    expect(fakes.openai.requests).toHaveLength(0)
  })
})
