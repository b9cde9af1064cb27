/**
 * The response cache on its own, in this process, against the local Redis
 * (`REDIS_URL`, default redis://127.0.0.1:6379): what a lookup hit, a miss and
 * a store cost through the live `ResponseCache` layer, and the pure parts
 * (key, seal, open) alone. A typical entry: a non-streamed chat answer of
 * about 1.5 KB, as the caller got it and in canonical form.
 *
 * Bounded: a fixed number of operations per figure, each phase under a
 * deadline. Keys belong to a project id of this run and are deleted at the
 * end. Run alone with `node bench/cache.ts`.
 */
import { randomUUID } from "node:crypto"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { Redis } from "ioredis"
import { fingerprinted } from "../src/config/index.ts"
import type { ChatResponse } from "../src/domain/index.ts"
import { open, seal } from "../src/pipeline/cache/crypto.ts"
import { decodeEntry, encodeEntry } from "../src/pipeline/cache/entry.ts"
import { cacheKey, redisKey, ResponseCache } from "../src/pipeline/cache/index.ts"
import type { CacheEntry, CacheScope } from "../src/pipeline/cache/index.ts"
import { JsonLog, Log } from "../src/infra/log.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const OPERATIONS = 2_000
const CONCURRENCY = 32
const PHASE_DEADLINE_MS = 30_000

const TEXT = "The capital of France is Paris. ".repeat(20)
const RESPONSE: ChatResponse = {
  id: "chatcmpl-bench",
  model: "gpt-4o-2024-08-06",
  created: 1_700_000_000,
  content: [{ type: "text", text: TEXT }],
  stopReason: "end_turn",
  usage: { inputTokens: 120, outputTokens: 160 }
}
const BODY = Buffer.from(JSON.stringify({
  id: RESPONSE.id,
  object: "chat.completion",
  created: RESPONSE.created,
  model: RESPONSE.model,
  choices: [{ index: 0, message: { role: "assistant", content: TEXT, refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 120, completion_tokens: 160, total_tokens: 280 }
}))
const ENTRY: CacheEntry = {
  kind: "chat",
  response: () => RESPONSE,
  body: { status: 200, contentType: "application/json", bytes: BODY },
  storedAt: Date.now(),
  provider: "openai"
}
const REQUEST = {
  model: "gpt-4o",
  temperature: 0,
  messages: [
    { role: "system", content: "You are a terse geography tutor." },
    { role: "user", content: "What is the capital of France? ".repeat(10) }
  ]
}

const round = (value: number) => Math.round(value * 100) / 100

/** Mean µs of `run` over `count` sequential calls (after a warm-up), within the phase deadline. */
const timed = async (label: string, count: number, run: (i: number) => unknown): Promise<number> => {
  for (let i = 0; i < Math.min(200, count); i++) await run(i)
  const deadline = Date.now() + PHASE_DEADLINE_MS
  const started = performance.now()
  let done = 0
  for (; done < count && Date.now() < deadline; done++) await run(done)
  if (done < count) console.warn(`${label}: stopped after ${done} of ${count} (deadline)`)
  return round(((performance.now() - started) * 1000) / done)
}

export const runCacheBench = async (): Promise<Record<string, number>> => {
  const scope = Effect.runSync(Scope.make())
  const layer = ResponseCache.layer.pipe(Layer.provide(Layer.succeed(Log, new JsonLog("warn", process.stderr))))
  const cache = Context.get(await Effect.runPromise(Layer.buildWithScope(layer, scope)), ResponseCache)
  const admin = new Redis(REDIS_URL)
  const project = `bench-${randomUUID()}`
  const section = {
    enabled: true,
    url: REDIS_URL,
    default_mode: "always" as const,
    ttl_seconds: 300,
    max_ttl_seconds: 300,
    max_entry_size_bytes: 1 << 20,
    pool_size: 8,
    encrypt: true,
    encrypt_salt: "bench-salt"
  }
  const cacheScope: CacheScope = { section, projectId: project, credential: fingerprinted(Redacted.make("sk-bench-caller-0123456789")) }
  const keyOf = (i: number) => cacheKey({ projectId: project, credential: cacheScope.credential, plan: "openai::gpt-4o", format: "openai", body: { ...REQUEST, seed: i } })
  const written: Array<string> = []
  const lookup = (key: string) => Effect.runPromise(cache.lookup(cacheScope, key))
  const results: Record<string, number> = {}
  try {
    const sealOptions = { encrypt: true, salt: section.encrypt_salt, projectId: project, credential: cacheScope.credential, entryKey: keyOf(0) }
    const sealed = seal(encodeEntry(ENTRY), sealOptions)
    results.entry_bytes = sealed.byteLength
    results.key_us = await timed("key", OPERATIONS, (i) => keyOf(i))
    results.encode_seal_us = await timed("seal", OPERATIONS, () => seal(encodeEntry(ENTRY), sealOptions))
    results.open_decode_us = await timed("open", OPERATIONS, () => decodeEntry(open(sealed, sealOptions)!))

    // A hit: GET of one stored entry, opened and decoded (the answer's JSON is parsed only on replay).
    const hitKey = keyOf(0)
    written.push(redisKey(hitKey))
    await Effect.runPromise(cache.store(cacheScope, hitKey, ENTRY, 300))
    const landed = Date.now() + 5_000
    while ((await lookup(hitKey)) === undefined) {
      if (Date.now() > landed) throw new Error("the bench entry never reached Redis")
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    results.lookup_hit_us = await timed("hit", OPERATIONS, async () => {
      if ((await lookup(hitKey)) === undefined) throw new Error("expected a hit")
    })
    results.lookup_miss_us = await timed("miss", OPERATIONS, (i) => lookup(keyOf(1_000_000 + i)))
    const concurrentStarted = performance.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      for (let i = 0; i < OPERATIONS / CONCURRENCY; i++) await lookup(hitKey)
    }))
    results.lookup_hits_per_second = Math.round(OPERATIONS / ((performance.now() - concurrentStarted) / 1000))

    // A store: what the request pays (encode, seal, hand the write over), then the writes landing.
    const storeKeys = Array.from({ length: OPERATIONS }, (_, i) => keyOf(10_000 + i))
    written.push(...storeKeys.map(redisKey))
    const storeStarted = performance.now()
    for (const key of storeKeys) await Effect.runPromise(cache.store(cacheScope, key, ENTRY, 300))
    results.store_call_us = round(((performance.now() - storeStarted) * 1000) / OPERATIONS)
    const allLanded = Date.now() + PHASE_DEADLINE_MS
    while ((await admin.exists(...storeKeys.map(redisKey))) < OPERATIONS) {
      if (Date.now() > allLanded) throw new Error("the stores never all reached Redis")
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    results.stores_per_second = Math.round(OPERATIONS / ((performance.now() - storeStarted) / 1000))
    // One store waited for: encode, seal, and the SET's round trip on a connection of its own.
    const direct = new Redis(REDIS_URL, { enableAutoPipelining: true })
    results.store_round_trip_us = await timed("store round trip", OPERATIONS, (i) =>
      direct.set(redisKey(storeKeys[i]), seal(encodeEntry(ENTRY), { ...sealOptions, entryKey: storeKeys[i] }), "EX", 300))
    direct.disconnect()
  } finally {
    for (let i = 0; i < written.length; i += 500) await admin.del(...written.slice(i, i + 500))
    admin.disconnect()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  return results
}

if (import.meta.main) {
  runCacheBench().then((results) => {
    console.table(results)
    process.exit(0)
  }, (error) => {
    console.error(error)
    process.exit(1)
  })
}
