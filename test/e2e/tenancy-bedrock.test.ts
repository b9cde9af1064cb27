/**
 * Bedrock with SigV4 from a tenant snapshot: the project's AWS keys travel
 * sealed inside its snapshot (`access_key_id`, `secret_access_key`,
 * `session_token`, each `{"value": …}`), the gateway's environment has none,
 * and every request reaches the fake Bedrock signed with the project's keys
 * (the fake checks the signature). The secret never reaches a log line.
 */
import OpenAI from "openai"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { generateKeyPair, publicKeyFromBytes, seal } from "../../src/tenancy/index.ts"
import { BEDROCK_TEST_CREDENTIALS } from "../fixtures/bedrock.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { redisFixture, REDIS_URL, uniqueProject } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const MODEL = "anthropic.claude-tenant-v1:0"
const redis = redisFixture()
const dir = mkdtempSync(join(tmpdir(), "gateway-tenant-bedrock-"))
const keys = generateKeyPair()
const keyPath = join(dir, "gateway.key")
writeFileSync(keyPath, `${keys.privateKey.toString("base64")}\n`, { mode: 0o600 })
const project = uniqueProject("bedrock")
const unsigned = uniqueProject("bedrock-nokeys")
let bedrock: FakeUpstream
let gateway: RunningGateway

const snapshot = (url: string, aws: Record<string, unknown>) => ({
  version: 1,
  providers: { bedrock: { base_url: url, region: BEDROCK_TEST_CREDENTIALS.region, auth_type: "sigv4", models: [MODEL], ...aws } }
})

const publish = async (projectId: string, document: Record<string, unknown>) => {
  await redis.put(projectId, "production", JSON.stringify(seal(JSON.stringify(document), publicKeyFromBytes(keys.publicKey))))
  await redis.announce(projectId, "production", 1)
}

beforeAll(async () => {
  bedrock = await startFakeUpstream({ kind: "bedrock" })
  await publish(project, snapshot(bedrock.url, {
    access_key_id: { value: BEDROCK_TEST_CREDENTIALS.accessKeyId },
    secret_access_key: { value: BEDROCK_TEST_CREDENTIALS.secretAccessKey },
    session_token: { value: BEDROCK_TEST_CREDENTIALS.sessionToken }
  }))
  await publish(unsigned, snapshot(bedrock.url, {}))
  // No AWS_* variable in the gateway's environment: the snapshot's keys are the only ones.
  gateway = await startGateway({ tenant_routing: { enabled: true, redis_url: REDIS_URL, private_key_path: keyPath } }, {})
})
afterAll(async () => {
  await gateway?.close()
  await bedrock?.close()
  await redis.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

const chat = (projectId: string, stream: boolean) => {
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null, "x-gw-project-id": projectId } })
  const messages = [{ role: "user" as const, content: "Hello from a tenant" }]
  return stream
    ? client.chat.completions.stream({ model: MODEL, messages, stream: true }).finalChatCompletion()
    : client.chat.completions.create({ model: MODEL, messages })
}

describe("a Bedrock provider in a sealed tenant snapshot", () => {
  it.each([false, true])("signs with the snapshot's AWS keys (stream %s): the fake accepts the signature", async (stream) => {
    bedrock.reset()
    const completion = await chat(project, stream)
    expect(completion.choices[0].message.content).toBeTruthy()
    const request = bedrock.lastRequest()!
    expect(request.path).toBe(`/model/${encodeURIComponent(MODEL)}/${stream ? "converse-stream" : "converse"}`)
    expect(String(request.headers.authorization)).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${BEDROCK_TEST_CREDENTIALS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request`))
    expect(request.headers["x-amz-security-token"]).toBe(BEDROCK_TEST_CREDENTIALS.sessionToken)
  })

  it("a snapshot without AWS keys reaches no upstream; no secret reaches the log", async () => {
    bedrock.reset()
    const error = await chat(unsigned, false).then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>)
    expect(error?.status).toBe(401)
    expect(bedrock.requests).toHaveLength(0)
    expect(JSON.stringify(gateway.logs)).not.toContain(BEDROCK_TEST_CREDENTIALS.secretAccessKey)
  })
})
