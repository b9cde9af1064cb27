/**
 * Thousands of malformed bodies per endpoint, generated from a seed (the same
 * bodies every run): every answer is a 4xx in the caller's own error format,
 * never a 5xx, a hang or a crash, and nothing reaches a provider. Requests go
 * to a model of the other wire format, so the gateway itself must judge them.
 */
import { Pool } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"
import { startGateway } from "./harness.ts"
import type { RunningGateway } from "./harness.ts"

const PER_ENDPOINT = 2000
const CONCURRENCY = 16

let openaiUp: FakeUpstream
let anthropicUp: FakeUpstream
let gateway: RunningGateway
let pool: Pool

beforeAll(async () => {
  openaiUp = await startFakeUpstream({ kind: "openai" })
  anthropicUp = await startFakeUpstream({ kind: "anthropic" })
  gateway = await startGateway({
    providers: {
      openai: { base_url: `${openaiUp.url}/v1`, models: ["gpt-4o", "text-embedding-3-small", "gpt-image-1", "tts-1", "rerank-1"], credential: "none" },
      anthropic: { base_url: anthropicUp.url, models: ["claude-e2e"], credential: "none" }
    }
  })
  pool = new Pool(gateway.url, { connections: CONCURRENCY })
})
afterAll(async () => {
  await pool.close()
  await gateway.close()
  await Promise.all([openaiUp.close(), anthropicUp.close()])
})

/** mulberry32: a small seeded PRNG. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

type Random = () => number
const pick = <A>(random: Random, items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]

const WRONG_VALUES: ReadonlyArray<unknown> = [null, 5, -1.5, true, "", "x", [], [1, 2], {}, { a: 1 }, [[[[]]]], "\u0000\ud800", 1e308]

interface Endpoint {
  readonly path: string
  readonly anthropic: boolean
  /** A chat endpoint reads the whole body (translated); the others check only the type of each required field. */
  readonly chat: boolean
  /** A valid body for a model of the other wire format. */
  readonly valid: Record<string, unknown>
  /** Fields whose wrong value the gateway must refuse. */
  readonly checked: ReadonlyArray<string>
}

const ENDPOINTS: ReadonlyArray<Endpoint> = [
  { path: "/v1/chat/completions", anthropic: false, chat: true, valid: { model: "claude-e2e", messages: [{ role: "user", content: "hi" }], temperature: 0.5 }, checked: ["model", "messages", "temperature", "stream", "tools"] },
  { path: "/v1/messages", anthropic: true, chat: true, valid: { model: "gpt-4o", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }, checked: ["model", "messages", "max_tokens", "stream", "system"] },
  { path: "/v1/responses", anthropic: false, chat: true, valid: { model: "claude-e2e", input: "hi" }, checked: ["model", "input", "stream", "instructions"] },
  { path: "/v1/messages/count_tokens", chat: false, anthropic: true, valid: { model: "claude-e2e", messages: [{ role: "user", content: "hi" }] }, checked: ["model", "messages"] },
  { path: "/v1/embeddings", chat: false, anthropic: false, valid: { model: "text-embedding-3-small", input: "hi" }, checked: ["model", "input"] },
  { path: "/v1/images/generations", chat: false, anthropic: false, valid: { model: "gpt-image-1", prompt: "a cat" }, checked: ["model", "prompt"] },
  { path: "/v1/audio/speech", chat: false, anthropic: false, valid: { model: "tts-1", input: "hi", voice: "alloy" }, checked: ["model", "input", "voice"] },
  { path: "/v1/rerank", chat: false, anthropic: false, valid: { model: "rerank-1", query: "q", documents: ["a"] }, checked: ["model", "query", "documents"] }
]

/** Values of the wrong JSON type for a field the gateway type-checks. */
const WRONG_TYPE: Readonly<Record<"string" | "array" | "string|array", ReadonlyArray<unknown>>> = {
  string: [undefined, null, 5, true, {}, []],
  array: [undefined, null, 5, true, {}, "a"],
  "string|array": [undefined, null, 5, true, {}]
}

/** Values a checked field cannot take (per field, so a generated body is never valid by accident). */
const wrongFor = (endpoint: Endpoint, field: string): ReadonlyArray<unknown> => {
  if (!endpoint.chat && field !== "model") {
    return WRONG_TYPE[field === "documents" || field === "messages" ? "array" : field === "input" ? "string|array" : "string"]
  }
  switch (field) {
    case "model":
      return [undefined, null, 5, "", [], {}, "no-such-model-\u00e9", "x".repeat(3000)]
    case "messages":
      return [undefined, null, 5, "hi", {}, [5], [null], [{ role: "wizard", content: "x" }], [{ role: "user", content: 5 }], [{ content: "x" }]]
    case "temperature":
    case "max_tokens":
      return ["hot", [], {}, true]
    case "stream":
      return ["yes", 1, [], {}]
    case "tools":
      return [5, "tools", [5], [{ type: "function" }], [{ type: "function", function: { name: 5 } }]]
    case "system":
      return [5, {}, [5], [{ type: "text" }]]
    case "input":
      return [undefined, null, 5, {}, [5], [{ role: "user", content: 5 }]]
    case "instructions":
      return [5, {}, []]
    case "prompt":
    case "query":
    case "voice":
      return [undefined, null, 5, {}, []]
    case "documents":
      return [undefined, null, 5, "a", {}]
    default:
      return WRONG_VALUES
  }
}

/** One malformed body: raw bytes that no endpoint may accept. */
const malformed = (random: Random, endpoint: Endpoint): string | Buffer => {
  const valid = JSON.stringify(endpoint.valid)
  switch (Math.floor(random() * 9)) {
    case 0:
      return Buffer.from(Array.from({ length: 1 + Math.floor(random() * 200) }, () => Math.floor(random() * 256)))
    case 1:
      return valid.slice(0, Math.floor(random() * (valid.length - 1)))
    case 2:
      return JSON.stringify(pick(random, [[], [endpoint.valid], 5, "text", null, true]))
    case 3: {
      const depth = 129 + Math.floor(random() * 3000)
      return `{"model":${JSON.stringify(endpoint.valid.model)},"x":${"[".repeat(depth)}${"]".repeat(depth)}}`
    }
    case 4:
      return valid.replace(/}$/, `,"big":${pick(random, ["1e400", "-1e999", "9".repeat(400)])}}`)
    case 5:
      return valid.replace(/}$/, `,"model":${JSON.stringify(pick(random, ["gpt-4o", "claude-e2e"]))}}`)
    default: {
      const body: Record<string, unknown> = { ...endpoint.valid }
      const field = pick(random, endpoint.checked)
      const value = pick(random, wrongFor(endpoint, field))
      if (value === undefined) delete body[field]
      else body[field] = value
      // Noise that does not make it valid: an unknown field, sometimes.
      if (random() < 0.3) body[`noise_${Math.floor(random() * 1000)}`] = pick(random, WRONG_VALUES)
      return JSON.stringify(body)
    }
  }
}

const isCallerEnvelope = (anthropic: boolean, body: unknown): boolean => {
  const json = body as { type?: unknown; error?: { type?: unknown; message?: unknown } }
  if (typeof json?.error?.message !== "string" || typeof json.error.type !== "string") return false
  return anthropic ? json.type === "error" : json.type === undefined
}

describe("fuzzed malformed bodies", () => {
  for (const [index, endpoint] of ENDPOINTS.entries()) {
    it(`${endpoint.path}: ${PER_ENDPOINT} malformed bodies, every answer a 4xx in the caller's format`, async () => {
      const random = prng(1000 + index)
      const bodies = Array.from({ length: PER_ENDPOINT }, () => malformed(random, endpoint))
      const failures: Array<string> = []
      let next = 0
      const worker = async () => {
        while (next < bodies.length && failures.length < 5) {
          const body = bodies[next++]
          const { statusCode, body: reply } = await pool.request({
            path: endpoint.path,
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
            headersTimeout: 5_000,
            bodyTimeout: 5_000
          })
          const text = await reply.text()
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          if (statusCode < 400 || statusCode >= 500 || !isCallerEnvelope(endpoint.anthropic, json)) {
            failures.push(`${statusCode} ${text.slice(0, 200)} for ${String(body).slice(0, 200)}`)
          }
        }
      }
      await Promise.all(Array.from({ length: CONCURRENCY }, worker))
      expect(failures).toEqual([])
      expect(openaiUp.requests.length + anthropicUp.requests.length).toBe(0)
    }, 60_000)
  }
})
