/**
 * Vertex AI with application default credentials found by google-auth-library
 * (`credentials_file = "adc"`, no GOOGLE_APPLICATION_CREDENTIALS): on a Google Cloud
 * machine the library asks the metadata server for the service account's token. Here
 * the metadata server is a fake on loopback (GCE_METADATA_HOST, in this test file's
 * worker only) that insists on `Metadata-Flavor: Google`; the fake Vertex gets its token.
 */
import OpenAI from "openai"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayWithFakes } from "./harness.ts"

const TOKEN = "ya29.metadata-server-token"
const asked: string[] = []
const home = mkdtempSync(join(tmpdir(), "vertex-adc-"))
const metadata: Server = createServer((req, res) => {
  asked.push(req.url ?? "")
  if (req.headers["metadata-flavor"] !== "Google") {
    res.writeHead(403)
    return res.end()
  }
  const headers = { "metadata-flavor": "Google", "content-type": "application/json" }
  if (req.url?.startsWith("/computeMetadata/v1/instance/service-accounts/default/token")) {
    res.writeHead(200, headers)
    return res.end(JSON.stringify({ access_token: TOKEN, expires_in: 3599, token_type: "Bearer" }))
  }
  if (req.url?.startsWith("/computeMetadata/v1/universe/universe-domain")) {
    res.writeHead(200, { ...headers, "content-type": "text/plain" })
    return res.end("googleapis.com")
  }
  res.writeHead(404, headers)
  res.end()
})

const saved = { ...process.env }
beforeAll(async () => {
  await new Promise<void>((resolve) => metadata.listen(0, "127.0.0.1", () => resolve()))
  const address = metadata.address()
  process.env.GCE_METADATA_HOST = `127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  process.env.METADATA_SERVER_DETECTION = "assume-present"
  // No gcloud default file nor key file variable may be found first.
  process.env.CLOUDSDK_CONFIG = home
  process.env.HOME = home
  delete process.env.GOOGLE_APPLICATION_CREDENTIALS
})
afterAll(async () => {
  await new Promise<void>((resolve) => metadata.close(() => resolve()))
  rmSync(home, { recursive: true, force: true })
  process.env = saved
})

const { fakes, gateway } = gatewayWithFakes(
  { vertex: { kind: "gemini", apiKey: TOKEN } },
  (f) => ({ providers: { vertex: { base_url: f.vertex.url, project: "p", location: "us-central1", models: ["gemini-adc"], credentials_file: "adc" } } })
)

describe("application default credentials from the metadata server", () => {
  it("the token the metadata server gives is the bearer Vertex gets, streamed and not", async () => {
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
    const completion = await client.chat.completions.create({ model: "gemini-adc", messages: [{ role: "user", content: "from metadata" }] })
    expect(completion.choices[0]!.message.content).toBe("echo: from metadata")
    const stream = await client.chat.completions.create({ model: "gemini-adc", messages: [{ role: "user", content: "again" }], stream: true })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("echo: again")
    expect(fakes.vertex.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`])
    // The library cached it: one token request for both calls.
    expect(asked.filter((url) => url.includes("/service-accounts/default/token"))).toHaveLength(1)
  })
})
