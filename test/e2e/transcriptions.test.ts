/**
 * `POST /v1/audio/transcriptions` end to end with the official `openai` SDK:
 * the multipart form is spooled, routed by its `model` field (which the SDK
 * sends after the file) and re-streamed upstream; the fake answers with the
 * byte count and sha256 of the file it received.
 */
import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI, { toFile } from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayWithFakes, startGateway } from "./harness.ts"

let spoolRoot: string
let previousTmp: string | undefined

type Json = Record<string, any>

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** Spooled forms left behind in this test's private temp root (the gateway runs in this process). */
const leftovers = () => readdirSync(spoolRoot)

/** Waits (bounded) until every spooled form was removed. */
const waitForNoLeftovers = async () => {
  for (let i = 0; i < 200 && leftovers().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  return leftovers()
}

// Spooled forms go under TMPDIR: this test's private root, set before the gateway starts and restored after it closed.
beforeAll(() => {
  previousTmp = process.env.TMPDIR
  spoolRoot = mkdtempSync(join(tmpdir(), "transcriptions-test-"))
  process.env.TMPDIR = spoolRoot
})
afterAll(() => {
  if (previousTmp === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = previousTmp
  rmSync(spoolRoot, { recursive: true, force: true })
})

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, azure: { kind: "azure" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["whisper-1", "gpt-4o-transcribe"], credential: "env::OPENAI_KEY" },
      azure: { base_url: fakes.azure.url, models: ["whisper-azure"], credential: "env::AZURE_KEY" },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-sonnet-4-5"], credential: "env::ANTHROPIC_KEY" }
    },
    targets: { stt: { model: "whisper-1" }, "stt-azure": { model: "whisper-azure" } },
    routes: {
      speech: { endpoint: "audio_transcription", models: ["speech-to-text"], strategy: "fallback", targets: ["stt-azure", "stt"] },
      chatty: { endpoint: "chat", models: ["chatty"], strategy: "single", targets: ["stt"] }
    },
    functions: {
      french: { endpoint: "audio_transcription", strategy: "experiment", variants: { fr: { model: "whisper-1", weight: 1, language: "fr" } } }
    },
    routing: { retry: { max_retries: 1, backoff_base_ms: 1 } }
  }),
  { OPENAI_KEY: "sk-openai-test", AZURE_KEY: "azure-key", ANTHROPIC_KEY: "sk-ant-test" }
)
let client: OpenAI

beforeAll(() => {
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "sk-caller-own", maxRetries: 0 })
})

const postRaw = (path: string, headers: Record<string, string>, body: string | FormData) =>
  fetch(`${gateway.url}${path}`, { method: "POST", headers, body })

describe("transcriptions", () => {
  it("forwards the audio file intact (byte count and sha256 match) and answers with the provider's JSON", async () => {
    const audio = randomBytes(3 * 1024 * 1024 + 17)
    const result = await client.audio.transcriptions.create({ file: await toFile(audio, "a.wav"), model: "whisper-1" })
    expect(result.text).toBe(`transcript of a.wav: ${audio.byteLength} bytes, sha256 ${sha256(audio)}, model whisper-1`)
    const seen = fakes.openai.requests[0]
    expect(seen.pathname).toBe("/v1/audio/transcriptions")
    // Bring-your-own-key: the SDK's key replaces the configured one, as for chat.
    expect(seen.headers.authorization).toBe("Bearer sk-caller-own")
    expect(seen.multipart?.fields.model).toBe("whisper-1")
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("forwards the other form fields and returns a plain-text response_format as is", async () => {
    const audio = randomBytes(4096)
    const response = await postRaw("/v1/audio/transcriptions", {}, formOf([
      ["file", new File([audio], "clip.mp3", { type: "audio/mpeg" })],
      ["model", "gpt-4o-transcribe"],
      ["response_format", "text"],
      ["language", "de"],
      ["timestamp_granularities[]", "word"],
      ["timestamp_granularities[]", "segment"]
    ]))
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/)
    expect(await response.text()).toBe(`transcript of clip.mp3: 4096 bytes, sha256 ${sha256(audio)}, model gpt-4o-transcribe\n`)
    // No caller key: the configured credential is used.
    expect(fakes.openai.requests[0].headers.authorization).toBe("Bearer sk-openai-test")
    const multipart = fakes.openai.requests[0].multipart!
    expect(multipart.fields).toMatchObject({ model: "gpt-4o-transcribe", response_format: "text", language: "de" })
    expect(multipart.files[0]).toMatchObject({ name: "file", filename: "clip.mp3", size: 4096 })
  })

  it("replaces the model field with the target's model and re-streams the file on failover", async () => {
    fakes.azure.script({ kind: "error", status: 503, times: 2 })
    const audio = randomBytes(200_000)
    const result = await client.audio.transcriptions.create({ file: await toFile(audio, "b.wav"), model: "speech-to-text" })
    expect(result.text).toBe(`transcript of b.wav: ${audio.byteLength} bytes, sha256 ${sha256(audio)}, model whisper-1`)
    expect(fakes.azure.requests[0].headers["api-key"]).toBe("sk-caller-own")
    // Two attempts at Azure (a retry), then the fallback target at OpenAI, each with the whole file.
    expect(fakes.azure.requests).toHaveLength(2)
    expect(fakes.azure.requests[0].pathname).toBe("/openai/deployments/whisper-azure/audio/transcriptions")
    for (const request of fakes.azure.requests) expect(request.multipart?.files[0]).toMatchObject({ size: audio.byteLength, sha256: sha256(audio) })
    expect(fakes.openai.requests[0].multipart?.fields.model).toBe("whisper-1")
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("rejects a form without a file part with 400", async () => {
    const response = await postRaw("/v1/audio/transcriptions", {}, formOf([["model", "whisper-1"]]))
    expect(response.status).toBe(400)
    const body = (await response.json()) as Json
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_request", param: "file" })
    expect(body.error.message).toMatch(/file/)
    expect(fakes.openai.requests).toHaveLength(0)
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("rejects a form without a model field with 400", async () => {
    const response = await postRaw("/v1/audio/transcriptions", {}, formOf([["file", new File([randomBytes(10)], "a.wav")]]))
    expect(response.status).toBe(400)
    expect(((await response.json()) as Json).error).toMatchObject({ code: "invalid_request", param: "model" })
  })

  it("rejects a non-multipart body with 400", async () => {
    const response = await postRaw("/v1/audio/transcriptions", { "content-type": "application/json" }, JSON.stringify({ model: "whisper-1", file: "x" }))
    expect(response.status).toBe(400)
    const body = (await response.json()) as Json
    expect(body.error.code).toBe("invalid_request")
    expect(body.error.message).toMatch(/multipart\/form-data/)
  })

  it("rejects a malformed multipart body with 400", async () => {
    const response = await postRaw(
      "/v1/audio/transcriptions",
      { "content-type": "multipart/form-data; boundary=xyz" },
      "--xyz\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--xyz\r\nContent-Disposi"
    )
    expect(response.status).toBe(400)
    expect(((await response.json()) as Json).error.code).toBe("invalid_request")
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("a text field of exactly 1 MiB is read; one byte more is a 413", async () => {
    const exact = await postRaw("/v1/audio/transcriptions", {}, formOf([
      ["file", new File([randomBytes(10)], "a.wav")],
      ["prompt", "x".repeat(1024 * 1024)],
      ["model", "whisper-1"]
    ]))
    expect(exact.status).toBe(200)
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("a form of 1000 parts is read; 1001 is a 413", async () => {
    const fields = (count: number): Array<[string, string | File]> => [
      ["file", new File([randomBytes(10)], "a.wav")],
      ["model", "whisper-1"],
      ...Array.from({ length: count - 2 }, (_, i): [string, string] => [`extra_${i}`, "v"])
    ]
    expect((await postRaw("/v1/audio/transcriptions", {}, formOf(fields(1000)))).status).not.toBe(413)
    expect((await postRaw("/v1/audio/transcriptions", {}, formOf(fields(1001)))).status).toBe(413)
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("answers 413 for a text field over 1 MiB", async () => {
    const response = await postRaw("/v1/audio/transcriptions", {}, formOf([
      ["file", new File([randomBytes(10)], "a.wav")],
      ["prompt", "x".repeat(1024 * 1024 + 1)],
      ["model", "whisper-1"]
    ]))
    expect(response.status).toBe(413)
    expect(((await response.json()) as Json).error.code).toBe("request_too_large")
    expect(fakes.openai.requests).toHaveLength(0)
    expect(await waitForNoLeftovers()).toEqual([])
  })

  it("answers 404 for an unknown model", async () => {
    const error = await client.audio.transcriptions.create({ file: await toFile(randomBytes(100), "a.wav"), model: "no-such-model" }).catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.NotFoundError)
    expect(error.error).toMatchObject({ code: "model_not_found" })
  })

  it("answers 400 for a messages-style model and for a route of another endpoint", async () => {
    const anthropic = await client.audio.transcriptions.create({ file: await toFile(randomBytes(100), "a.wav"), model: "claude-sonnet-4-5" }).catch((e) => e)
    expect(anthropic).toBeInstanceOf(OpenAI.BadRequestError)
    expect(anthropic.error).toMatchObject({ code: "unsupported_for_model" })
    expect(anthropic.error.message).toMatch(/messages-style/)
    const chatRoute = await client.audio.transcriptions.create({ file: await toFile(randomBytes(100), "a.wav"), model: "chatty" }).catch((e) => e)
    expect(chatRoute).toBeInstanceOf(OpenAI.BadRequestError)
    expect(fakes.anthropic.requests).toHaveLength(0)
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("passes an upstream 4xx through with the classification headers", async () => {
    fakes.openai.script({ kind: "error", status: 400, message: "Invalid file format.", code: "invalid_value" })
    const response = await postRaw("/v1/audio/transcriptions", {}, formOf([
      ["file", new File([randomBytes(10)], "a.txt")],
      ["model", "whisper-1"]
    ]))
    expect(response.status).toBe(400)
    expect(response.headers.get("x-gw-error-code")).toBe("bad_request")
    expect(response.headers.get("x-gw-upstream-provider")).toBe("openai")
    expect(((await response.json()) as Json).error.message).toBe("Invalid file format.")
  })

  it("removes the spooled file when the caller disconnects mid-upload", async () => {
    const boundary = "disconnect-boundary"
    const request = Http.request(`${gateway.url}/v1/audio/transcriptions`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(10 * 1024 * 1024) }
    })
    request.on("error", () => {})
    request.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`)
    request.write(randomBytes(512 * 1024))
    // The upload is being spooled: a temp directory exists (bounded wait).
    for (let i = 0; i < 200 && leftovers().length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(leftovers()).toHaveLength(1)
    request.destroy()
    expect(await waitForNoLeftovers()).toEqual([])
    expect(fakes.openai.requests).toHaveLength(0)
  })
})

/** A multipart body built by the platform's FormData (fetch sets the boundary). */
const formOf = (entries: ReadonlyArray<readonly [string, string | File]>): FormData => {
  const form = new FormData()
  for (const [name, value] of entries) form.append(name, value)
  return form
}

describe("translations", () => {
  it("audio.translations.create follows the same rules, sent with an exact content-length", async () => {
    const audio = randomBytes(50_000)
    const result = await client.audio.translations.create({ file: await toFile(audio, "speech.wav"), model: "whisper-1" })
    expect(result.text).toContain(`${audio.byteLength} bytes, sha256 ${sha256(audio)}`)
    const received = fakes.openai.requests[0]
    expect(received.path).toBe("/v1/audio/translations")
    expect(Number(received.headers["content-length"])).toBe(received.bodySize)
  })
})

describe("experiments", () => {
  it("a transcription experiment variant replaces the form's fields with its parameters", async () => {
    const audio = randomBytes(2048)
    await client.audio.transcriptions.create({ file: await toFile(audio, "clip.wav"), model: "function::french", language: "en" })
    const multipart = fakes.openai.requests[0].multipart!
    expect(multipart.fields).toMatchObject({ model: "whisper-1", language: "fr" })
    expect(multipart.files[0]).toMatchObject({ name: "file", size: 2048, sha256: sha256(audio) })
  })
})

describe("upload limits", () => {
  it("a transcription file over server.max_upload_bytes is refused with 413 before it fills the disk", async () => {
    const small = await startGateway({
      server: { max_upload_bytes: 64 * 1024 },
      providers: { openai: { base_url: `${fakes.openai.url}/v1`, models: ["whisper-1"], credential: "none" } }
    })
    try {
      const form = new FormData()
      form.append("file", new Blob([randomBytes(256 * 1024)]), "big.wav")
      form.append("model", "whisper-1")
      const response = await fetch(`${small.url}/v1/audio/transcriptions`, { method: "POST", body: form })
      expect(response.status).toBe(413)
      expect(await response.json()).toMatchObject({ error: { code: "request_too_large" } })
      expect(fakes.openai.requests.length).toBe(0)
      expect(await waitForNoLeftovers()).toEqual([])
    } finally {
      await small.close()
    }
  })
})
