/**
 * Helpers for the cache service tests: a layer built in a scope of its own,
 * sections and entries, and bounded polling. A redis-server of a test's own
 * is the shared fixture `startOwnRedis` (test/fixtures/own-redis.ts).
 */
import { randomUUID } from "node:crypto"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { fingerprinted } from "../../../src/config/index.ts"
import type { ChatResponse } from "../../../src/domain/index.ts"
import { cacheKey, ResponseCache } from "../../../src/pipeline/cache/index.ts"
import type { CacheEntry, CacheScope, CacheSection, MemoryStore } from "../../../src/pipeline/cache/index.ts"
import { Log } from "../../../src/infra/log.ts"
import { closedPort } from "../../fixtures/otlp-receiver.ts"

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

export const section = (fields: Partial<CacheSection> = {}): CacheSection => ({
  enabled: true,
  url: REDIS_URL,
  default_mode: "always",
  ttl_seconds: 600,
  max_ttl_seconds: 3600,
  max_entry_size_bytes: 64 * 1024,
  pool_size: 2,
  encrypt: true,
  encrypt_salt: "cache-service-test-salt",
  ...fields
})

export interface BuiltCache {
  readonly cache: ResponseCache["Service"]
  readonly logs: Array<Record<string, unknown>>
  readonly lookup: (scope: CacheScope, key: string) => Promise<CacheEntry | undefined>
  readonly store: (scope: CacheScope, key: string, entry: CacheEntry, ttlSeconds?: number) => Promise<void>
  readonly ready: (section: CacheSection) => Promise<boolean>
  /** The cache's own warnings (`cache unavailable`), by kind. */
  readonly failures: (kind: string) => Array<Record<string, unknown>>
  readonly close: () => Promise<void>
}

/** The live layer (or the memory one, given its store), built in a scope closed by `close`. */
export const buildCache = async (memory?: MemoryStore): Promise<BuiltCache> => {
  const logs: Array<Record<string, unknown>> = []
  const scope = Effect.runSync(Scope.make())
  const layer = (memory === undefined ? ResponseCache.layer : ResponseCache.layerTest(memory)).pipe(Layer.provide(Log.layerTest(logs)))
  const cache = Context.get(await Effect.runPromise(Layer.buildWithScope(layer, scope)), ResponseCache)
  return {
    cache,
    logs,
    lookup: (s, key) => Effect.runPromise(cache.lookup(s, key)),
    store: (s, key, entry, ttlSeconds = 600) => Effect.runPromise(cache.store(s, key, entry, ttlSeconds)),
    ready: (s) => Effect.runPromise(cache.ready(s)),
    failures: (kind) => logs.filter((line) => line.msg === "cache unavailable" && line.kind === kind),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** A project id no other test run uses, so keys never collide with another run's. */
export const uniqueProject = (label: string) => `${label}-${randomUUID()}`

export const scopeOf = (cacheSection: CacheSection, projectId: string, credential = "sk-caller-one-0123456789"): CacheScope => ({
  section: cacheSection,
  projectId,
  credential: fingerprinted(Redacted.make(credential))
})

/** The key of a chat request asking `prompt`, as the chat program computes it. */
export const keyFor = (scope: CacheScope, prompt: string) =>
  cacheKey({
    projectId: scope.projectId,
    credential: scope.credential,
    plan: "openai::gpt-4o",
    format: "openai",
    body: { model: "gpt-4o", temperature: 0, messages: [{ role: "user", content: prompt }] }
  })

export const answerOf = (text: string): ChatResponse => ({
  id: "chatcmpl-1",
  model: "gpt-4o",
  created: 1_700_000_000,
  content: [{ type: "text", text }],
  stopReason: "end_turn",
  usage: { inputTokens: 9, outputTokens: 4 }
})

/** A non-streamed chat answer as the caller got it, with its canonical form. */
export const chatEntry = (text: string): CacheEntry => ({
  kind: "chat",
  response: () => answerOf(text),
  body: {
    status: 200,
    contentType: "application/json",
    bytes: Buffer.from(JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }] }))
  },
  storedAt: Date.now(),
  provider: "openai"
})

/** Polls `check` every 10 ms until it holds, failing after `timeoutMs`. */
export const until = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 3000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

export { closedPort }
