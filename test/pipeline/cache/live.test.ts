/**
 * The live `ResponseCache` layer against the real local Redis: what a lookup
 * finds, what is written and how it looks to an operator, how connections
 * are pooled, and what is logged. Keys belong to projects no other run uses
 * and are deleted afterwards.
 */
import { createServer } from "node:net"
import type { Server } from "node:net"
import { Redacted } from "effect"
import { Redis } from "ioredis"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { fingerprinted } from "../../../src/config/index.ts"
import { redisKey } from "../../../src/pipeline/cache/index.ts"
import type { BuiltCache } from "./support.ts"
import { answerOf, buildCache, chatEntry, closedPort, keyFor, REDIS_URL, scopeOf, section, uniqueProject, until } from "./support.ts"

let admin: Redis
const written = new Set<string>()
const opened: Array<BuiltCache> = []

const open = async () => {
  const built = await buildCache()
  opened.push(built)
  return built
}

/** Waits until the background write of `key` reached Redis. */
const landed = async (key: string) => {
  written.add(redisKey(key))
  await until(`${key} in Redis`, async () => (await admin.exists(redisKey(key))) === 1)
}

beforeAll(() => {
  admin = new Redis(REDIS_URL)
})
afterEach(async () => {
  await Promise.all(opened.splice(0).map((built) => built.close()))
})
afterAll(async () => {
  if (written.size > 0) await admin.del(...written)
  admin.disconnect()
})

describe("store, then lookup", () => {
  it("is a hit with the stored answer, even as the very first command of a fresh pool, and nothing is logged", async () => {
    const writer = await open()
    const scope = scopeOf(section(), uniqueProject("hit"))
    const key = keyFor(scope, "what is the capital of France?")
    const stored = chatEntry("Paris.")
    const bytes = stored.kind === "chat" ? stored.body!.bytes : new Uint8Array()
    await writer.store(scope, key, stored)
    await landed(key)

    const reader = await open()
    const entry = await reader.lookup(scope, key)
    expect(entry?.kind).toBe("chat")
    if (entry?.kind !== "chat") return
    expect(entry.response()).toEqual(answerOf("Paris."))
    expect(Buffer.from(entry.body!.bytes).equals(Buffer.from(bytes))).toBe(true)
    expect(entry.storedAt).toBe(stored.storedAt)
    expect([...writer.logs, ...reader.logs]).toEqual([])
  })

  it("another request, another credential or another project is a clean miss (nothing logged)", async () => {
    const cache = await open()
    const project = uniqueProject("miss")
    const scope = scopeOf(section(), project)
    const key = keyFor(scope, "a question")
    await cache.store(scope, key, chatEntry("an answer"))
    await landed(key)
    expect(await cache.lookup(scope, key)).toBeDefined()

    const otherCaller = scopeOf(section(), project, "sk-caller-two-0123456789")
    const otherProject = scopeOf(section(), uniqueProject("miss-other"))
    expect(await cache.lookup(scope, keyFor(scope, "another question"))).toBeUndefined()
    expect(await cache.lookup(otherCaller, keyFor(otherCaller, "a question"))).toBeUndefined()
    expect(await cache.lookup(otherProject, keyFor(otherProject, "a question"))).toBeUndefined()
    expect(cache.logs).toEqual([])
  })

  it("the entry lives for the TTL given", async () => {
    const cache = await open()
    const scope = scopeOf(section(), uniqueProject("ttl"))
    const key = keyFor(scope, "keep me two minutes")
    await cache.store(scope, key, chatEntry("ok"), 120)
    await landed(key)
    const ttl = await admin.ttl(redisKey(key))
    expect(ttl).toBeGreaterThan(100)
    expect(ttl).toBeLessThanOrEqual(120)
  })

  it("an entry larger than max_entry_size_bytes (as stored) is not written", async () => {
    const cache = await open()
    // One connection, so the small write cannot overtake the big one on another socket.
    const small = section({ max_entry_size_bytes: 2048, pool_size: 1, url: `${REDIS_URL}/0` })
    const scope = scopeOf(small, uniqueProject("oversize"))
    const big = keyFor(scope, "big")
    const fits = keyFor(scope, "small")
    await cache.store(scope, big, chatEntry("x".repeat(4096)))
    await cache.store(scope, fits, chatEntry("short"))
    await landed(fits)
    written.add(redisKey(big))
    expect(await admin.exists(redisKey(big))).toBe(0)
    expect(await cache.lookup(scope, big)).toBeUndefined()
  })
})

describe("what an operator sees in Redis", () => {
  const PROMPT = "my account number is 7741-SECRET"
  const ANSWER = "Your balance is 1,000,000 credits"

  const storedValue = async (cacheSection = section()) => {
    const cache = await open()
    const scope = scopeOf(cacheSection, uniqueProject("operator"))
    const key = keyFor(scope, PROMPT)
    await cache.store(scope, key, chatEntry(ANSWER))
    await landed(key)
    return { name: redisKey(key), value: (await admin.getBuffer(redisKey(key)))!, scope, key, cache }
  }

  it("a key of a fixed prefix and a hash, a value showing neither the prompt nor the answer", async () => {
    const { name, value } = await storedValue()
    expect(name).toMatch(/^gw:cache:v1:[0-9a-f]{64}$/)
    for (const encoding of ["utf8", "latin1"] as const) {
      expect(value.toString(encoding)).not.toContain("7741-SECRET")
      expect(value.toString(encoding)).not.toContain("1,000,000 credits")
    }
  })

  it("with encrypt = false the same answer is readable in the store (which is why it warns)", async () => {
    const { value } = await storedValue(section({ encrypt: false }))
    expect(value.toString("utf8")).toContain("1,000,000 credits")
  })

  it("an entry copied under another caller's key, or another key of the same caller, does not open: a miss, logged once", async () => {
    const { value, scope, cache } = await storedValue()
    const thief = { ...scope, credential: fingerprinted(Redacted.make("sk-someone-else-0123456789")) }
    const thiefKey = keyFor(thief, PROMPT)
    const movedKey = keyFor(scope, "another question entirely")
    for (const name of [redisKey(thiefKey), redisKey(movedKey)]) {
      written.add(name)
      await admin.set(name, value)
    }
    expect(await cache.lookup(thief, thiefKey)).toBeUndefined()
    expect(await cache.lookup(scope, movedKey)).toBeUndefined()
    expect(await cache.lookup(scope, movedKey)).toBeUndefined()
    expect(cache.failures("unreadable entry")).toHaveLength(1)
  })
})

describe("connections", () => {
  const DB = 7
  const ours = async () => {
    const list = String(await admin.call("CLIENT", "LIST"))
    return list.split("\n").filter((line) => line.includes(" name=gateway-cache ") && line.includes(` db=${DB} `)).length
  }

  it("one pool of pool_size connections per url, shared by every project naming it, closed with the layer", async () => {
    const cache = await buildCache()
    const pooled = section({ url: `${REDIS_URL}/${DB}`, pool_size: 3 })
    for (const project of [uniqueProject("pool-a"), uniqueProject("pool-b")]) {
      const scope = scopeOf(pooled, project)
      await cache.lookup(scope, keyFor(scope, "anything"))
    }
    await until("three pooled connections", async () => (await ours()) === 3)
    await cache.close()
    await until("the pool's connections to close", async () => (await ours()) === 0)
  })

  it("ready answers whether the store answers", async () => {
    const cache = await open()
    expect(await cache.ready(section())).toBe(true)
    expect(await cache.ready(section({ url: `redis://127.0.0.1:${await closedPort()}` }))).toBe(false)
  })

  it("a password in the URL is never logged, not even inside an error", async () => {
    const cache = await open()
    const guarded = section({ url: `redis://:pw-s3cret-42@127.0.0.1:${await closedPort()}` })
    const scope = scopeOf(guarded, uniqueProject("password"))
    expect(await cache.lookup(scope, keyFor(scope, "q"))).toBeUndefined()
    await cache.store(scope, keyFor(scope, "q"), chatEntry("a"))
    expect(await cache.ready(guarded)).toBe(false)
    await until("the refused connection to be logged", () => cache.failures("connection").length > 0)
    expect(cache.logs.length).toBeGreaterThan(0)
    expect(JSON.stringify(cache.logs)).not.toContain("pw-s3cret-42")
    expect(cache.logs[0].url).toMatch(/^redis:\/\/:redacted@127\.0\.0\.1:\d+$/)
  })

  it("rediss:// connects with TLS, redis:// in plain text", async () => {
    const firstBytes: Array<number> = []
    const server: Server = createServer((socket) => {
      socket.once("data", (data) => {
        firstBytes.push(data[0])
        socket.destroy()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    const port = (server.address() as { port: number }).port
    try {
      for (const scheme of ["rediss", "redis"]) {
        const cache = await buildCache()
        const scope = scopeOf(section({ url: `${scheme}://127.0.0.1:${port}`, pool_size: 1 }), uniqueProject(scheme))
        expect(await cache.lookup(scope, keyFor(scope, "q"))).toBeUndefined()
        await until(`a first ${scheme} write`, () => firstBytes.length > 0)
        // 0x16: a TLS handshake record; "*": a RESP command.
        expect(firstBytes.shift()).toBe(scheme === "rediss" ? 0x16 : "*".charCodeAt(0))
        await cache.close()
      }
    } finally {
      server.close()
    }
  })
})
