/**
 * The Files API end to end with the official `openai` SDK: upload, list,
 * retrieve, content and delete streamed through to the provider chosen by
 * `x-genai-provider` or, without it, the only files-capable provider.
 */
import { createHash, randomBytes } from "node:crypto"
import OpenAI, { toFile } from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

type Json = Record<string, any>

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

let openaiUp: FakeUpstream
let groqUp: FakeUpstream
let azureUp: FakeUpstream
let anthropicUp: FakeUpstream
/** One files-capable provider (openai) next to a messages-style one. */
let single: RunningGateway
/** Three files-capable providers: the header must choose. */
let several: RunningGateway

beforeAll(async () => {
  openaiUp = await startFakeUpstream({ kind: "openai" })
  groqUp = await startFakeUpstream({ kind: "openai" })
  azureUp = await startFakeUpstream({ kind: "azure" })
  anthropicUp = await startFakeUpstream({ kind: "anthropic" })
  const env = { OPENAI_KEY: "sk-openai-config", GROQ_KEY: "gsk-config", AZURE_KEY: "azure-config", ANTHROPIC_KEY: "sk-ant-config" }
  single = await startGateway({
    providers: {
      openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
      anthropic: { base_url: anthropicUp.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    }
  }, env)
  several = await startGateway({
    providers: {
      openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
      groq: { kind: "openai", base_url: `${groqUp.url}/v1`, models: ["llama"], credential: "env::GROQ_KEY" },
      azure: { base_url: azureUp.url, models: ["gpt-4o-deployment"], credential: "env::AZURE_KEY" },
      anthropic: { base_url: anthropicUp.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    }
  }, env)
})

afterAll(async () => {
  await Promise.all([single.close(), several.close()])
  await Promise.all([openaiUp.close(), groqUp.close(), azureUp.close(), anthropicUp.close()])
})

beforeEach(() => {
  for (const fake of [openaiUp, groqUp, azureUp, anthropicUp]) fake.reset()
})

const clientOf = (gateway: RunningGateway, headers: Record<string, string> = {}, apiKey = "sk-caller-own") =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0, defaultHeaders: headers })

describe("files with one files-capable provider", () => {
  it("upload, list, retrieve, content and delete round-trip through the gateway", async () => {
    const client = clientOf(single)
    const content = randomBytes(300_000)
    const created = await client.files.create({ file: await toFile(content, "train.jsonl"), purpose: "batch" })
    expect(created).toMatchObject({ object: "file", bytes: content.byteLength, filename: "train.jsonl", purpose: "batch" })
    expect(openaiUp.files.get(created.id)).toMatchObject({ size: content.byteLength, sha256: sha256(content) })
    // The multipart bytes went upstream as the SDK sent them.
    const upload = openaiUp.requests[0]
    expect(upload.method).toBe("POST")
    expect(upload.pathname).toBe("/v1/files")
    expect(upload.multipart?.fields.purpose).toBe("batch")

    const second = await client.files.create({ file: await toFile(Buffer.from("{}\n"), "small.jsonl"), purpose: "fine-tune" })

    const page = await client.files.list({ purpose: "batch", limit: 5, order: "asc" })
    expect(page.data.map((file) => file.id)).toEqual([created.id])
    const listRequest = openaiUp.requests.find((request) => request.method === "GET" && request.pathname === "/v1/files")!
    expect(listRequest.query).toMatchObject({ purpose: "batch", limit: "5", order: "asc" })
    const all = await client.files.list({ limit: 1, order: "asc" })
    expect(all.data.map((file) => file.id)).toEqual([created.id])
    const next = await client.files.list({ limit: 1, order: "asc", after: created.id })
    expect(next.data.map((file) => file.id)).toEqual([second.id])

    const retrieved = await client.files.retrieve(created.id)
    expect(retrieved).toEqual(created)

    const download = await client.files.content(created.id)
    expect(download.headers.get("content-type")).toBe("application/octet-stream")
    expect(Buffer.from(await download.arrayBuffer()).equals(content)).toBe(true)

    const deleted = await client.files.delete(created.id)
    expect(deleted).toEqual({ id: created.id, object: "file", deleted: true })
    expect(openaiUp.files.has(created.id)).toBe(false)
  })

  it("sends the caller's own key (bring-your-own-key) and otherwise the configured credential", async () => {
    await clientOf(single).files.list()
    expect(openaiUp.requests[0].headers.authorization).toBe("Bearer sk-caller-own")
    const response = await fetch(`${single.url}/v1/files`)
    expect(response.status).toBe(200)
    expect(openaiUp.requests[1].headers.authorization).toBe("Bearer sk-openai-config")
  })

  it("passes an upstream 404 through verbatim with the classification headers", async () => {
    const response = await fetch(`${single.url}/v1/files/file-missing`)
    expect(response.status).toBe(404)
    expect(response.headers.get("x-gw-error-code")).toBe("model_not_found")
    expect(response.headers.get("x-gw-upstream-provider")).toBe("openai")
    expect(await response.json()).toEqual({
      error: { message: "No such File object: file-missing", type: "invalid_request_error", param: "id", code: null }
    })
    const error = await clientOf(single).files.retrieve("file-missing").catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.NotFoundError)
  })

  it("keeps a file id with reserved characters one path segment", async () => {
    await fetch(`${single.url}/v1/files/${encodeURIComponent("file a/b")}`)
    expect(openaiUp.requests[0].pathname).toBe("/v1/files/file%20a%2Fb")
  })

  it("rejects a non-multipart upload with 400 without calling the provider", async () => {
    const response = await fetch(`${single.url}/v1/files`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ purpose: "batch", file: "abc" })
    })
    expect(response.status).toBe(400)
    const body = (await response.json()) as Json
    expect(body.error).toMatchObject({ code: "invalid_request", type: "invalid_request_error" })
    expect(body.error.message).toMatch(/multipart\/form-data/)
    expect(openaiUp.requests).toHaveLength(0)
  })

  it("answers 400 when x-genai-provider names a messages-style provider", async () => {
    const error = await clientOf(single, { "x-genai-provider": "anthropic" }).files.list().catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error.error).toMatchObject({ code: "unsupported_for_model" })
    expect(error.error.message).toMatch(/messages-style provider "anthropic"/)
    expect(anthropicUp.requests).toHaveLength(0)
  })

  it("answers 400 when x-genai-provider names an unknown provider", async () => {
    const error = await clientOf(single, { "x-genai-provider": "nope" }).files.list().catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error.error.message).toMatch(/"nope", which is not configured/)
  })
})

describe("files with several files-capable providers", () => {
  it("answers 400 asking for x-genai-provider when it is absent", async () => {
    const error = await clientOf(several).files.list().catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error.error).toMatchObject({ code: "invalid_request" })
    expect(error.error.message).toMatch(/x-genai-provider/)
    expect(error.error.message).toMatch(/openai, groq, azure/)
    expect(openaiUp.requests.length + groqUp.requests.length + azureUp.requests.length).toBe(0)
  })

  it("uses the provider x-genai-provider picks", async () => {
    const client = clientOf(several, { "x-genai-provider": "groq" })
    const created = await client.files.create({ file: await toFile(Buffer.from("hello"), "h.txt"), purpose: "user_data" })
    expect(groqUp.files.get(created.id)?.sha256).toBe(sha256(Buffer.from("hello")))
    expect(openaiUp.requests).toHaveLength(0)
    expect(groqUp.requests[0].headers).not.toHaveProperty("x-genai-provider")
  })

  it("sends Azure files requests to /openai/files with the api-version and the api-key header", async () => {
    const client = clientOf(several, { "x-genai-provider": "azure" }, "azure-caller")
    const created = await client.files.create({ file: await toFile(Buffer.from("data"), "d.jsonl"), purpose: "batch" })
    const content = await client.files.content(created.id)
    expect(await content.text()).toBe("data")
    const [upload, download] = azureUp.requests
    expect(upload.path).toBe("/openai/files?api-version=2024-10-21")
    expect(upload.headers["api-key"]).toBe("azure-caller")
    expect(upload.headers).not.toHaveProperty("authorization")
    expect(download.path).toBe(`/openai/files/${created.id}/content?api-version=2024-10-21`)
  })
})
