/**
 * Vertex AI with Google credentials (`credentials_file`): a service-account key file (a path,
 * or `env::VAR` holding one) and application default credentials (`"adc"` with
 * GOOGLE_APPLICATION_CREDENTIALS). The key files' `token_uri` points at a fake OAuth token
 * endpoint on loopback that verifies each JWT-bearer assertion against the key's public half
 * and issues numbered tokens; every request the fake Vertex receives must carry a token it
 * issued that had not expired. Tokens are cached, and refreshed once they near expiry.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { createVerify, generateKeyPairSync } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { failure, withServer } from "../config/support.ts"
import { gatewayWithFakes } from "./harness.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const PRIVATE_PEM = privateKey.export({ type: "pkcs8", format: "pem" }).toString()
const SCOPE = "https://www.googleapis.com/auth/cloud-platform"

/** How long each service account's tokens live (seconds); `denied@` is refused. */
const LIFETIMES: Record<string, number> = { "main@p.iam.gserviceaccount.com": 3600, "short@p.iam.gserviceaccount.com": 1, "adc@p.iam.gserviceaccount.com": 3600 }

interface Issued {
  readonly token: string
  readonly email: string
  readonly expiresAt: number
}

/** The fake token endpoint: checks the assertion like Google's, then issues `ya29.fake-<n>`. */
const tokenEndpoint = () => {
  const issued: Issued[] = []
  const refused: string[] = []
  let url = ""
  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }
  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const form = new URLSearchParams(text)
    const [header, claims, signature] = (form.get("assertion") ?? "").split(".")
    const verified = req.url === "/token" && form.get("grant_type") === "urn:ietf:params:oauth:grant-type:jwt-bearer" &&
      signature !== undefined && createVerify("RSA-SHA256").update(`${header}.${claims}`).verify(publicKey, Buffer.from(signature, "base64url"))
    const payload = verified ? JSON.parse(Buffer.from(claims!, "base64url").toString()) as Record<string, unknown> : {}
    const lifetime = LIFETIMES[String(payload.iss)]
    if (!verified || payload.aud !== url || payload.scope !== SCOPE || lifetime === undefined) {
      refused.push(String(payload.iss))
      return answer(res, 400, { error: "invalid_grant", error_description: "Invalid JWT Signature." })
    }
    const token = `ya29.fake-${issued.length + 1}`
    issued.push({ token, email: String(payload.iss), expiresAt: Date.now() + lifetime * 1000 })
    answer(res, 200, { access_token: token, expires_in: lifetime, token_type: "Bearer" })
  }
  const server: Server = createServer((req, res) => {
    let text = ""
    req.on("data", (chunk: Buffer) => (text += chunk.toString()))
    req.on("end", () => handle(req, res, text))
  })
  return {
    issued,
    refused,
    get url() {
      return url
    },
    start: () =>
      new Promise<void>((resolve) =>
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/token`
          resolve()
        })
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const tokens = tokenEndpoint()
const dir = mkdtempSync(join(tmpdir(), "vertex-keys-"))
const keyFile = (email: string): string => {
  const path = join(dir, `${email.split("@")[0]}.json`)
  const key = { type: "service_account", project_id: "p", private_key_id: "kid-1", private_key: PRIVATE_PEM, client_email: email, token_uri: tokens.url }
  writeFileSync(path, JSON.stringify(key))
  return path
}

beforeAll(() => tokens.start())
afterAll(async () => {
  await tokens.close()
  rmSync(dir, { recursive: true, force: true })
})

const vertexTable = (url: string, models: string[], credentialsFile: string) => ({
  kind: "vertex",
  base_url: url,
  project: "p",
  location: "us-central1",
  models,
  credentials_file: credentialsFile
})

const env: Record<string, string> = {}
const { fakes, gateway } = gatewayWithFakes(
  { vertex: { kind: "gemini" } },
  (f) => {
    env.SHORT_KEY_FILE = keyFile("short@p.iam.gserviceaccount.com")
    env.GOOGLE_APPLICATION_CREDENTIALS = keyFile("adc@p.iam.gserviceaccount.com")
    return {
      providers: {
        vertex: vertexTable(f.vertex.url, ["gemini-main"], keyFile("main@p.iam.gserviceaccount.com")),
        "vertex-short": vertexTable(f.vertex.url, ["gemini-short"], "env::SHORT_KEY_FILE"),
        "vertex-adc": vertexTable(f.vertex.url, ["gemini-adc"], "adc"),
        "vertex-claude": { ...vertexTable(f.vertex.url, ["claude-on-vertex"], keyFile("main@p.iam.gserviceaccount.com")), publisher: "anthropic" },
        "vertex-denied": vertexTable(f.vertex.url, ["gemini-denied"], keyFile("denied@p.iam.gserviceaccount.com"))
      }
    }
  },
  env
)

const openai = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })

/** The bearer of each request the fake Vertex got, after checking it is one the token endpoint issued and still valid. */
const bearersSeen = (): string[] =>
  fakes.vertex.requests.map((request) => {
    const token = String(request.headers.authorization).replace(/^Bearer /, "")
    const issued = tokens.issued.find((entry) => entry.token === token)
    expect(issued, `a token the endpoint issued, got ${token}`).toBeDefined()
    return token
  })

describe("Vertex AI with a service-account key file", () => {
  it("exchanges the key at its token_uri and sends the token as bearer, cached across requests (OpenAI and Anthropic callers, streamed and not)", async () => {
    const before = tokens.issued.length
    const completion = await openai().chat.completions.create({ model: "gemini-main", messages: [{ role: "user", content: "hi vertex" }] })
    expect(completion.choices[0]!.message.content).toBe("echo: hi vertex")
    expect(fakes.vertex.lastRequest()!.path).toBe("/v1/projects/p/locations/us-central1/publishers/google/models/gemini-main:generateContent")
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })
    const stream = anthropic.messages.stream({ model: "gemini-main", max_tokens: 50, messages: [{ role: "user", content: "hi stream" }] })
    const message = await stream.finalMessage()
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "echo: hi stream" })])
    const seen = bearersSeen()
    expect(seen).toHaveLength(2)
    expect(new Set(seen).size).toBe(1)
    expect(tokens.issued.slice(before).map((entry) => entry.email)).toEqual(["main@p.iam.gserviceaccount.com"])
  })

  it("Claude on Vertex (publisher = \"anthropic\") goes to streamRawPredict with the Google token, its version in the body and no model", async () => {
    const stream = await openai().chat.completions.create({ model: "claude-on-vertex", messages: [{ role: "user", content: "hi claude" }], stream: true })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("echo: hi claude")
    const request = fakes.vertex.lastRequest()!
    expect(request.path).toBe("/v1/projects/p/locations/us-central1/publishers/anthropic/models/claude-on-vertex:streamRawPredict")
    expect(request.json).toMatchObject({ anthropic_version: "vertex-2023-10-16", stream: true })
    expect(request.json).not.toHaveProperty("model")
    const [token] = bearersSeen()
    expect(tokens.issued.find((entry) => entry.token === token)!.email).toBe("main@p.iam.gserviceaccount.com")
  })

  it("the native passthrough /v1/vertex/* carries the Google token too", async () => {
    const response = await fetch(`${gateway.url}/v1/vertex/v1/projects/p/locations/us-central1/publishers/google/models/gemini-main:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "passed through" }] }] })
    })
    expect(response.status).toBe(200)
    expect(JSON.stringify(await response.json())).toContain("echo: passed through")
    const [token] = bearersSeen()
    expect(tokens.issued.find((entry) => entry.token === token)!.email).toBe("main@p.iam.gserviceaccount.com")
  })

  it("fetches a new token once the cached one nears expiry (a key file named by env::VAR, tokens living one second)", async () => {
    const first = await openai().chat.completions.create({ model: "gemini-short", messages: [{ role: "user", content: "one" }] })
    expect(first.choices[0]!.message.content).toBe("echo: one")
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const second = await openai().chat.completions.create({ model: "gemini-short", messages: [{ role: "user", content: "two" }] })
    expect(second.choices[0]!.message.content).toBe("echo: two")
    const [a, b] = bearersSeen()
    expect(a).not.toBe(b)
    expect(tokens.issued.filter((entry) => entry.email === "short@p.iam.gserviceaccount.com").map((entry) => entry.token)).toEqual([a, b])
  })

  it("application default credentials read the key file of GOOGLE_APPLICATION_CREDENTIALS", async () => {
    const completion = await openai().chat.completions.create({ model: "gemini-adc", messages: [{ role: "user", content: "adc" }] })
    expect(completion.choices[0]!.message.content).toBe("echo: adc")
    const [token] = bearersSeen()
    expect(tokens.issued.find((entry) => entry.token === token)!.email).toBe("adc@p.iam.gserviceaccount.com")
  })

  it("a refused token exchange is an error in the caller's format, reaching no model and leaking no key", async () => {
    const error = await openai().chat.completions.create({ model: "gemini-denied", messages: [{ role: "user", content: "no" }] }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBeGreaterThanOrEqual(500)
    expect(tokens.refused).toContain("denied@p.iam.gserviceaccount.com")
    expect(fakes.vertex.requests).toHaveLength(0)
    const logged = JSON.stringify(gateway.logs) + JSON.stringify((error as Error).message)
    expect(logged).not.toContain("PRIVATE KEY")
    expect(logged).not.toContain("ya29.fake-")
  })
})

describe("credentials_file in the configuration", () => {
  it("is refused on a provider that is not Vertex AI", () => {
    expect(failure(withServer({ providers: { gemini: { models: ["m"], credentials_file: "/k.json" } } }))).toContain(
      "providers.gemini.credentials_file: Google credentials are for kind \"vertex\" only"
    )
  })

  it("publisher is refused on a provider that is not Vertex AI", () => {
    expect(failure(withServer({ providers: { anthropic: { models: ["m"], publisher: "anthropic" } } }))).toContain(
      "providers.anthropic.publisher: for kind \"vertex\" only"
    )
  })

  it("names the unset variable of an env:: location", () => {
    const table = { project: "p", location: "us-central1", models: ["m"], credentials_file: "env::NO_SUCH_KEY_FILE" }
    expect(failure(withServer({ providers: { vertex: table } }))).toContain("providers.vertex.credentials_file: NO_SUCH_KEY_FILE is not set")
  })
})
