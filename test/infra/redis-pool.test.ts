/**
 * The Redis pool's own sending (`RedisPool.send`, `sendWritten`), on the shared test Redis:
 * the commands of one event-loop turn go on one connection (one write, one
 * read of the replies), answered in order with strings or Buffers, errors as
 * rejections; the next turn takes the next connection.
 */
import { Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { redisEndpoint } from "../../src/config/index.ts"
import { RedisPool } from "../../src/infra/redis-pool.ts"
import { bulkString } from "../../src/infra/resp.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const NAME = `pool-test-${process.pid}`

let admin: Redis
let pool: RedisPool

/** The last command of each of the pool's connections (CLIENT LIST's `cmd=`). */
const lastCommands = async (): Promise<Array<string>> => {
  const list = String(await admin.call("CLIENT", "LIST"))
  return list.split("\n").filter((line) => line.includes(` name=${NAME} `)).map((line) => /\bcmd=(\S+)/.exec(line)?.[1] ?? "")
}

beforeAll(async () => {
  admin = new Redis(REDIS_URL)
  pool = new RedisPool({ endpoint: redisEndpoint(REDIS_URL), size: 4, connectionName: NAME, commandTimeoutMs: 1_000, onError: () => {} })
  // Every connection up (each answers a PING of its own turn).
  for (let i = 0; i < 8; i++) await pool.send("ping", [])
})

afterAll(async () => {
  await pool.close()
  admin.disconnect()
})

describe("RedisPool.send", () => {
  it("answers a turn's commands in order: strings, Buffers, and a failed command's error", async () => {
    const key = `${NAME}:value`
    const answers = await Promise.allSettled([
      pool.send("set", [key, Buffer.from([0, 1, 255]), "EX", 60]),
      pool.send("get", [key], true),
      pool.send("echo", ["text"]),
      pool.send("evalsha", ["0".repeat(40), 0])
    ])
    expect(answers.slice(0, 3)).toEqual([
      { status: "fulfilled", value: "OK" },
      { status: "fulfilled", value: Buffer.from([0, 1, 255]) },
      { status: "fulfilled", value: "text" }
    ])
    expect(answers[3].status === "rejected" && String(answers[3].reason)).toMatch(/NOSCRIPT/)
  })

  it("sends a command written in RESP as it is, and answers as for its arguments", async () => {
    const args = ["return {KEYS[1], ARGV[1], ARGV[2]}", 1, "kéy", 42] as const
    const resp = `*${args.length + 1}\r\n${bulkString("eval")}${args.map(bulkString).join("")}`
    expect(await pool.sendWritten("eval", resp, () => args)).toEqual(["kéy", "42"])
    const unknown = `*3\r\n${bulkString("evalsha")}${bulkString("0".repeat(40))}${bulkString(0)}`
    await expect(pool.sendWritten("evalsha", unknown, () => ["0".repeat(40), 0])).rejects.toThrow(/NOSCRIPT/)
  })

  it("sends one turn's commands on one connection, and the next turn's on another", async () => {
    await Promise.all(Array.from({ length: 8 }, (_, i) => pool.send("echo", [`first ${i}`])))
    expect((await lastCommands()).filter((command) => command === "echo")).toHaveLength(1)
    await Promise.all([pool.send("time", []), pool.send("time", [])])
    const commands = await lastCommands()
    expect(commands.filter((command) => command === "echo")).toHaveLength(1)
    expect(commands.filter((command) => command === "time")).toHaveLength(1)
  })
})
