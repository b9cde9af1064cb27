/**
 * A routing test written as docs/testing-your-routing.md shows runs the
 * gateway's own request program: what it answers is what the running server
 * answers. Here a tenant snapshot that switches an endpoint off, served by the
 * real server from Redis and tested the doc's way, side by side.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { routingFromSnapshot, scriptedProviders, sendRequest, TestReply } from "../../src/testing.ts"
import type { UpstreamCall } from "../../src/testing.ts"
import { startGateway } from "../e2e/harness.ts"
import type { RunningGateway } from "../e2e/harness.ts"
import { redisFixture, REDIS_URL, uniqueProject } from "../tenancy/support.ts"

const SNAPSHOT = {
  version: 1,
  disabled_endpoints: ["embeddings"],
  // Nothing listens there: neither gateway may call it.
  providers: { openai: { base_url: "http://127.0.0.1:9/v1", models: ["gpt-4o", "text-embedding-3-small"], credential: { value: "sk-snapshot-key" } } }
}

const redis = redisFixture()
const project = uniqueProject("routing-doc")
let server: RunningGateway

beforeAll(async () => {
  await redis.put(project, "production", SNAPSHOT)
  server = await startGateway({ tenant_routing: { enabled: true, redis_url: REDIS_URL } })
})
afterAll(async () => {
  await server?.close()
  await redis.cleanup()
})

it("a routing test of a snapshot with disabled_endpoints is refused 403 feature_disabled, exactly as the server refuses it", async () => {
  const response = await fetch(`${server.url}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-gw-project-id": project },
    body: JSON.stringify({ model: "text-embedding-3-small", input: "Hello" })
  })
  const served = { status: response.status, code: response.headers.get("x-gw-error-code"), body: await response.json() }

  const calls: Array<UpstreamCall> = []
  const providers = scriptedProviders(() => TestReply.json(200, { object: "list", data: [], model: "text-embedding-3-small", usage: { prompt_tokens: 1, total_tokens: 1 } }), calls)
  const tested = await Effect.runPromise(
    sendRequest(routingFromSnapshot(SNAPSHOT), { model: "text-embedding-3-small", path: "/v1/embeddings" }).pipe(Effect.provide(providers))
  )

  expect(served).toMatchObject({ status: 403, code: "feature_disabled" })
  expect({ status: tested.status, code: tested.headers["x-gw-error-code"], body: tested.body }).toEqual(served)
  expect(calls).toEqual([])
})
