/**
 * A small pool of ioredis connections to one URL (`redis://` or `rediss://`,
 * TLS for the latter, or a Redis Cluster's seeds: redis-client.ts), for a store
 * that must never hold a request up: a command either goes out on a
 * connection that is ready, or fails at once.
 *
 * Details
 * - No offline queue and no retry of a command: while the store is down a
 *   command fails immediately instead of waiting for a reconnect, and
 *   nothing piles up in memory. Each command is bounded (`commandTimeoutMs`),
 *   so a store that accepts connections but never answers (frozen, paused)
 *   cannot keep commands, or the pool's close, waiting forever.
 * - The one exception is the pool's first connection: commands issued while
 *   it is still being made wait for it (the caller bounds that wait), so the
 *   first requests after a start are not failures.
 * - Connections are used round robin, skipping any that is not ready.
 * - `send` writes a command to one server's connection itself: the commands
 *   of one event-loop turn go on one connection, corked, and leave in one
 *   write at the end of the turn (`setImmediate`, where ioredis's
 *   auto-pipelining flushes), without the pipeline object, promises and ticks
 *   ioredis builds per batch to do it. The next turn takes the next connection.
 * - Reconnection backs off exponentially to 2 s with jitter, so the pools of
 *   many processes do not reconnect in step while the store is down.
 * - On a cluster each pooled client is a `Cluster` (its own connection to
 *   every master); one master down fails the commands of its slots only,
 *   and the client stays ready for the others (redis-client.ts).
 *
 * Gotchas
 * - A URL's password must never reach a log: use `redisLogTarget`
 *   (src/config/redis-url.ts) for the URL and for any error text before logging it.
 */
import { Command } from "ioredis"
import type { Redis } from "ioredis"
import { connectRedis, isCluster, pingAny } from "./redis-client.ts"
import type { RedisClient, RedisEndpoint } from "./redis-client.ts"

export interface RedisPoolOptions {
  readonly endpoint: RedisEndpoint
  readonly size: number
  /** `CLIENT SETNAME`, so an operator can tell the gateway's connections apart. */
  readonly connectionName: string
  readonly commandTimeoutMs: number
  /** Every connection error (refused, reset, TLS, auth), for rate-limited logging. */
  readonly onError: (error: Error) => void
}

/** A command was not sent: no connection to the store is up. */
export class RedisNotConnected extends Error {
  constructor() {
    super("no connection to the store is up")
  }
}

/** A command its sender wrote in RESP: written as it is (ioredis would encode every argument again). */
class WrittenCommand extends Command {
  private readonly resp: string

  constructor(name: string, resp: string) {
    super(name, [], { replyEncoding: "utf8" })
    this.resp = resp
  }

  override toWritable(): string {
    return this.resp
  }
}

const CONNECT_TIMEOUT_MS = 1_000
/** How long `close` lets QUIT flush before the sockets are cut. */
const CLOSE_WAIT_MS = 500

const reconnectDelay = (times: number): number => Math.min(50 * 2 ** Math.min(times, 6), 2_000) + Math.floor(Math.random() * 250)

export class RedisPool {
  private readonly clients: ReadonlyArray<RedisClient>
  /** The URL names a Redis Cluster: commands over several keys must keep to one slot. */
  readonly cluster: boolean
  private next = 0
  /** Until the pool's first connection is ready (or the first attempt failed): what commands wait for. */
  private firstConnect: Promise<void> | undefined
  /** The sockets `send` wrote to in this turn, uncorked together at its end. */
  private readonly corked: Array<Redis["stream"]> = []
  /** The connection of this turn's commands (the last one corked). */
  private corkedClient: Redis | undefined

  constructor(options: RedisPoolOptions) {
    let settle: () => void = () => {}
    this.firstConnect = new Promise<void>((resolve) => {
      settle = () => {
        this.firstConnect = undefined
        resolve()
      }
    })
    this.clients = Array.from({ length: options.size }, () => {
      const client = connectRedis(options.endpoint, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: options.commandTimeoutMs,
        connectTimeout: CONNECT_TIMEOUT_MS,
        disconnectTimeout: 200,
        retryStrategy: reconnectDelay,
        connectionName: options.connectionName,
        // Commands of one event-loop turn share a write: fewer syscalls per lookup under load.
        enableAutoPipelining: true
      })
      client.once("ready", settle)
      client.on("error", (error: Error) => {
        // A first attempt that fails (refused, unknown host) ends the wait: the store is down.
        settle()
        options.onError(error)
      })
      // A cluster's node failures (one master down) leave the client ready; they are reported all the same.
      client.on("node error", (error: Error) => options.onError(error))
      return client
    })
    this.cluster = this.clients.length > 0 && isCluster(this.clients[0])
  }

  /** A ready connection; while the first connection is being made, one once it is ready; else fails. */
  acquire(): Promise<RedisClient> {
    const ready = this.readyClient()
    if (ready !== undefined) return Promise.resolve(ready)
    const pending = this.firstConnect
    if (pending === undefined) return Promise.reject(new RedisNotConnected())
    return pending.then(() => this.readyClient() ?? Promise.reject(new RedisNotConnected()))
  }

  /**
   * Sends one command (`name` as Redis spells it, lower case) and answers its
   * reply: strings, or Buffers with `buffers`. A cluster's client routes it
   * itself (its slot, MOVED and ASK), one write per command.
   */
  send(name: string, args: ReadonlyArray<string | number | Buffer>, buffers = false): Promise<unknown> {
    const ready = this.connection()
    if (ready !== undefined) return this.sendOn(ready, name, args, buffers)
    return this.acquire().then((client) => this.sendOn(client, name, args, buffers))
  }

  /**
   * `send` of a command its caller wrote in RESP (`resp`: `*<count>`, then
   * each of `name` and its arguments as a `bulkString`, resp.ts), for a command sent
   * often with mostly the same arguments (a script over a subject's keys):
   * one server gets `resp` as it is; a cluster's client is sent `args()`
   * (it finds the command's slot in them). Answers strings.
   */
  sendWritten(name: string, resp: string, args: () => ReadonlyArray<string | number>): Promise<unknown> {
    const ready = this.connection()
    if (ready !== undefined) return this.sendWrittenOn(ready, name, resp, args)
    return this.acquire().then((client) => this.sendWrittenOn(client, name, resp, args))
  }

  /** The connection of a command sent now: this turn's (one write, one read of the replies), else the next ready one. */
  private connection(): RedisClient | undefined {
    return this.corkedClient?.status === "ready" ? this.corkedClient : this.readyClient()
  }

  private sendWrittenOn(client: RedisClient, name: string, resp: string, args: () => ReadonlyArray<string | number>): Promise<unknown> {
    if (isCluster(client)) return this.sendOn(client, name, args(), false)
    const command = new WrittenCommand(name, resp)
    this.cork(client)
    client.sendCommand(command)
    return command.promise
  }

  private sendOn(client: RedisClient, name: string, args: ReadonlyArray<string | number | Buffer>, buffers: boolean): Promise<unknown> {
    const command = new Command(name, args as Array<string | number | Buffer>, { replyEncoding: buffers ? null : "utf8" })
    // A cluster's client writes to the node of the command's slot, itself.
    if (!isCluster(client)) this.cork(client)
    client.sendCommand(command)
    return command.promise
  }

  private cork(client: Redis): void {
    if (client === this.corkedClient) return
    const { stream } = client
    if (stream === undefined || stream === null) return
    stream.cork()
    if (this.corked.push(stream) === 1) setImmediate(this.uncork)
    this.corkedClient = client
  }

  private readonly uncork = (): void => {
    for (const stream of this.corked) stream.uncork()
    this.corked.length = 0
    this.corkedClient = undefined
  }

  /** PING for a readiness report: the server, or any master of a cluster, answers. */
  ping(): Promise<string> {
    return this.acquire().then(pingAny)
  }

  private readyClient(): RedisClient | undefined {
    const count = this.clients.length
    for (let tried = 0; tried < count; tried++) {
      const client = this.clients[this.next]
      this.next = (this.next + 1) % count
      if (client.status === "ready") return client
    }
    return undefined
  }

  /** Lets pending replies arrive for a moment (QUIT), then closes every socket. */
  async close(): Promise<void> {
    await Promise.all(this.clients.map(async (client) => {
      if (client.status === "ready") {
        await Promise.race([client.quit().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())])
      }
      client.disconnect()
    }))
  }
}
