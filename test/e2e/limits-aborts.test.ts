/**
 * Callers who leave at any moment (during admission, before the head, in
 * the middle of a stream) never leave a running slot behind: a burst of
 * requests, each aborted by its caller after a different delay, and once they
 * are all gone the key's concurrency window is empty, so the key is not
 * locked out by requests that no longer run.
 */
import { randomUUID } from "node:crypto"
import { Redis } from "ioredis"
import { afterAll, beforeAll, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { REDIS_URL } from "../tenancy/support.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const NAME = `aborts-${randomUUID().slice(0, 8)}`
const KEY = `gwk-${NAME}-0c1d2e3f`
const REQUESTS = 300
/** The upstream (a little slow, streams chunk by chunk), the gateway, and a client to read the store. */
let upstream: FakeUpstream, gateway: RunningGateway, redis: Redis

beforeAll(async () => {
  upstream = await startFakeUpstream({ kind: "openai", latencyMs: 5, chunkDelayMs: 2, record: false })
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  gateway = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, models: ["gpt-4o"], credential: "none" } },
    telemetry: { enabled: false },
    limits: { url: REDIS_URL },
    keys: { [NAME]: { key: "env::ABORTS_KEY", requests_per_minute: 100_000, tokens_per_minute: 1_000_000_000, concurrent_requests: 1000 } }
  }, { ABORTS_KEY: KEY })
})
afterAll(async () => {
  await gateway.close()
  const keys = await redis.keys(`gw:limits:{key:${NAME}}:*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
  await upstream.close()
})

const abandoned = (i: number) => {
  const abort = new AbortController()
  setTimeout(() => abort.abort(), 5 + (i % 40))
  return fetch(`${gateway.url}/v1/chat/completions`, {
    signal: abort.signal,
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-caller", "x-gw-authorization": `Bearer ${KEY}` },
    body: JSON.stringify({ model: "gpt-4o", stream: i % 2 === 0, messages: [{ role: "user", content: "one two three four five six seven" }] })
  }).then((response) => response.text()).catch(() => "aborted")
}

it("a burst of callers who all leave at different moments leaves no running slot", async () => {
  await Promise.all(Array.from({ length: REQUESTS }, (_, i) => abandoned(i)))
  const slots = `gw:limits:{key:${NAME}}:conc`
  const deadline = Date.now() + 5000
  while ((await redis.zcard(slots)) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  expect(await redis.zcard(slots)).toBe(0)
})
