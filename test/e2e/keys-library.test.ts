/**
 * Gateway keys and limits through the library (`gatewayLayer`, requests in
 * memory): the same key check, and a request run without HTTP is settled
 * when its program ends, so a concurrency slot is free for the next one.
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, expect, it } from "vitest"
import { Gateway, GatewayRequestError, gatewayLayer } from "../../src/index.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { REDIS_URL } from "../tenancy/support.ts"

const KEY = `gwk-library-${randomUUID()}`
const NAME = `library-${randomUUID().slice(0, 8)}`
let upstream: FakeUpstream

beforeAll(async () => {
  upstream = await startFakeUpstream({ kind: "openai" })
})
afterAll(() => upstream.close())

it("a request without the key is refused 401; with it, one request at a time is admitted again and again", async () => {
  const toml = `
[providers.openai]
base_url = "${upstream.url}/v1"
models = ["gpt-4o"]
credential = "none"

[telemetry]
enabled = false

[limits]
url = "${REDIS_URL}"

[keys.${NAME}]
key = "env::LIBRARY_KEY"
concurrent_requests = 1
`
  const headers = { "x-gw-authorization": `Bearer ${KEY}` }
  const outcome = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const gw = yield* Gateway
    const refused = yield* Effect.flip(gw.chat({ model: "gpt-4o", messages: [{ role: "user", content: "no key" }] }))
    const answers = []
    for (let i = 0; i < 3; i++) answers.push(yield* gw.chat({ model: "gpt-4o", messages: [{ role: "user", content: `turn ${i}` }] }, { headers }))
    return { refused, answers }
  })).pipe(Effect.provide(gatewayLayer({ toml }, { env: { LIBRARY_KEY: KEY } }))))
  expect(outcome.refused).toBeInstanceOf(GatewayRequestError)
  expect([outcome.refused.status, outcome.refused.code]).toEqual([401, "invalid_api_key"])
  expect(outcome.answers.map((answer) => answer.choices[0].message.content)).toEqual(["echo: turn 0", "echo: turn 1", "echo: turn 2"])
})
