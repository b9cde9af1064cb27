import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { beforeAll, describe, expect, it } from "vitest"
import { fakeEmbedding, fakeSpeechBytes, promptTokensOf } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" }, cohere: { kind: "cohere" } },
  (fakes) => ({
    providers: {
      openai: {
        base_url: `${fakes.openai.url}/v1`,
        models: ["text-embedding-3-small", "gpt-image-1", "tts-1", "gpt-4o", "bge-reranker"],
        credential: "env::OPENAI_KEY"
      },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "env::ANTHROPIC_KEY" },
      cohere: { base_url: fakes.cohere.url, models: ["rerank-v3.5"], credential: "env::COHERE_KEY" }
    },
    targets: { embedder: { model: "text-embedding-3-small" } },
    routes: { vectors: { endpoint: "embeddings", models: ["vectors"], strategy: "single", targets: ["embedder"] } },
    functions: {
      embed_ab: {
        endpoint: "embeddings",
        strategy: "experiment",
        variants: { small: { model: "text-embedding-3-small", weight: 1, dimensions: 8 } }
      }
    }
  }),
  { OPENAI_KEY: "sk-openai-conf", ANTHROPIC_KEY: "sk-ant-conf", COHERE_KEY: "co-conf" }
)
let openai: OpenAI
let anthropic: Anthropic

beforeAll(() => {
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "x", maxRetries: 0, defaultHeaders: { authorization: null } })
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: "x", maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })
})

const post = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

describe("embeddings", () => {
  it("embeddings.create decodes the SDK's base64 default into the upstream's floats", async () => {
    const result = await openai.embeddings.create({ model: "text-embedding-3-small", input: "hello vectors" })
    const expected = fakeEmbedding("hello vectors", 32)
    expect(result.data[0].embedding.length).toBe(32)
    result.data[0].embedding.forEach((value, i) => expect(value).toBeCloseTo(expected[i], 5))
    expect(fakes.openai.requests[0].headers.authorization).toBe("Bearer sk-openai-conf")
  })
  it("a route of endpoint embeddings serves embeddings, with the target's model upstream", async () => {
    await openai.embeddings.create({ model: "vectors", input: "routed" })
    expect(fakes.openai.requests[0].json).toMatchObject({ model: "text-embedding-3-small", input: "routed" })
  })
  it("an experiment function on embeddings draws a variant whose parameters reach the provider", async () => {
    const response = await post("/v1/embeddings", { model: "function::embed_ab", input: "ab" })
    expect(response.status).toBe(200)
    expect(response.headers.get("x-gw-variant")).toBe("small")
    expect(fakes.openai.requests[0].json).toMatchObject({ model: "text-embedding-3-small", input: "ab", dimensions: 8 })
  })
  it("a messages-style model is a 400 naming the provider", async () => {
    const response = await post("/v1/embeddings", { model: "claude-e2e", input: "x" })
    expect(response.status).toBe(400)
    const body = await response.json() as { error: { code: string; message: string } }
    expect(body.error.code).toBe("unsupported_for_model")
    expect(body.error.message).toContain("messages-style")
    expect(fakes.anthropic.requests.length).toBe(0)
  })
  it("a model no provider lists is a 404", async () => {
    expect((await post("/v1/embeddings", { model: "text-embedding-9", input: "x" })).status).toBe(404)
  })
  it("input is required", async () => {
    const response = await post("/v1/embeddings", { model: "text-embedding-3-small" })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: { param: "input" } })
  })
})

describe("images", () => {
  it("images.generate returns the provider's images", async () => {
    const result = await openai.images.generate({ model: "gpt-image-1", prompt: "a cat", n: 1, size: "1024x1024" })
    expect(result.data?.[0].b64_json ?? result.data?.[0].url).toBeTruthy()
    expect(fakes.openai.requests[0].json).toMatchObject({ prompt: "a cat", size: "1024x1024" })
  })
  it("a messages-style model is a 400", async () => {
    expect((await post("/v1/images/generations", { model: "claude-e2e", prompt: "x" })).status).toBe(400)
  })
})

describe("speech", () => {
  it("audio.speech.create returns the audio bytes exactly, with the upstream content type", async () => {
    const response = await openai.audio.speech.create({ model: "tts-1", input: "say this", voice: "alloy" })
    expect(response.headers.get("content-type")).toBe("audio/mpeg")
    const bytes = Buffer.from(await response.arrayBuffer())
    expect(bytes.equals(fakeSpeechBytes("say this", "mp3"))).toBe(true)
  })
  it("a messages-style model is a 400", async () => {
    expect((await post("/v1/audio/speech", { model: "claude-e2e", input: "x", voice: "alloy" })).status).toBe(400)
  })
})

describe("count_tokens", () => {
  it("messages.countTokens is answered by the Anthropic provider's own endpoint", async () => {
    const params = { model: "claude-e2e", messages: [{ role: "user" as const, content: "count these tokens please" }] }
    const result = await anthropic.messages.countTokens(params)
    expect(result.input_tokens).toBe(promptTokensOf(fakes.anthropic.requests[0].json as Record<string, unknown>))
    expect(fakes.anthropic.requests[0].path).toBe("/v1/messages/count_tokens")
    expect(fakes.anthropic.requests[0].headers["x-api-key"]).toBe("sk-ant-conf")
  })
  it("a completions-style model is a 400 in the Anthropic envelope", async () => {
    const response = await post("/v1/messages/count_tokens", { model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } })
    expect(fakes.openai.requests.length).toBe(0)
  })
})

describe("rerank", () => {
  const documents = ["Paris is the capital of France", "Berlin is in Germany", "The Seine flows through Paris"]
  it("a cohere model is reranked by Cohere v2", async () => {
    const response = await post("/v1/rerank", { model: "rerank-v3.5", query: "Paris", documents, top_n: 2 })
    expect(response.status).toBe(200)
    const body = await response.json() as { results: Array<{ index: number; relevance_score: number }> }
    expect(body.results).toHaveLength(2)
    expect(fakes.cohere.requests[0].path).toBe("/v2/rerank")
    expect(fakes.cohere.requests[0].headers.authorization).toBe("Bearer co-conf")
  })
  it("an openai-kind provider that lists the model gets {base}/rerank", async () => {
    const response = await post("/v1/rerank", { model: "bge-reranker", query: "Paris", documents })
    expect(response.status).toBe(200)
    expect(fakes.openai.requests[0].path).toBe("/v1/rerank")
  })
  it("a chat-only provider's model is a 400", async () => {
    expect((await post("/v1/rerank", { model: "claude-e2e", query: "q", documents })).status).toBe(400)
  })
  it("documents are required", async () => {
    expect((await post("/v1/rerank", { model: "rerank-v3.5", query: "q" })).status).toBe(400)
  })
})
