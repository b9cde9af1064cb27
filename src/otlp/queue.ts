/**
 * A bounded queue of encoded items (spans) on their way to one collector with
 * one credential: items are written into the open batch as they end, a batch
 * is sealed into a whole export request when it is full or a second has
 * passed, and one request is in flight at a time.
 *
 * Details
 * - Writing is synchronous and costs the encoding alone; nothing waits for a
 *   collector. A queue that is full (its item or byte bound reached, because
 *   the collector is down, slow or refusing) drops new items and reports
 *   each drop (the export error log throttles and counts them).
 * - A batch holds at most `maxBatch` items and about `maxBatchBytes` bytes:
 *   collectors refuse messages over 4 MiB by default.
 * - Queues may share a `ByteBudget` (the GenAI pipelines of every token do):
 *   whatever the number of tokens, what they hold together is bounded. The
 *   writer's buffer is not counted: a queue keeps at most 1 MiB of it
 *   between batches.
 * - An item whose writing threw (never committed) is forgotten by the next
 *   `open()`: a batch never carries half an item.
 * - A batch the collector could not take for a passing reason (OTLP's
 *   retryable gRPC codes: unavailable, deadline exceeded, resource exhausted…)
 *   is sent again after 1, 2 and 4 s (new items wait behind it, bounded as
 *   ever); then, or at once for any other failure, it is dropped and reported.
 *   `flush` and `close` do not wait out a retry: what is left is tried once
 *   more, now.
 * - No timer runs while the queue is empty: an idle gateway is never woken.
 * - `immediate` (the test layer) seals every item as its own batch and sends
 *   it at once, so an item is readable as soon as it is written.
 */
import { exportRequest } from "./common.ts"
import type { RequestHead } from "./common.ts"
import { ProtoWriter } from "./protobuf.ts"

/** Sends one encoded OTLP export request; rejects when the collector did not take it. */
export type SendExport = (request: Buffer) => Promise<void>

/** Bytes held by several queues together, and their bound. */
export class ByteBudget {
  used = 0
  readonly max: number
  constructor(max: number) {
    this.max = max
  }
}

export interface QueueOptions {
  readonly head: RequestHead
  readonly send: SendExport
  /** Items held at most (sealed and open batches together); more are dropped. */
  readonly maxQueued: number
  /** Bytes held at most; more items are dropped. */
  readonly maxQueuedBytes: number
  readonly maxBatch: number
  readonly maxBatchBytes: number
  readonly delayMs: number
  readonly immediate?: boolean | undefined
  /** A bound shared with other queues. */
  readonly budget?: ByteBudget | undefined
  /** Waits before each new try of a batch whose failure `retryable` says may pass (default 1, 2 and 4 s). */
  readonly retryDelaysMs?: ReadonlyArray<number> | undefined
  /** A send failed, or an item was dropped from a full queue (reported every time: the log throttles). */
  readonly onFailure: (error: unknown) => void
}

/** The writer's first buffer, and the most it keeps between batches (a batch of large spans that grew it further gives it back when sealed). */
const WRITER_BYTES = 64 * 1024
const KEPT_WRITER_BYTES = 1024 * 1024

const RETRY_DELAYS_MS: ReadonlyArray<number> = [1000, 2000, 4000]

/** A failure that may pass: the send marked it `retryable` (otlp/grpc.ts does for OTLP's retryable codes). */
const retryable = (error: unknown): boolean => (error as { readonly retryable?: unknown } | undefined)?.retryable === true

const QUEUE_FULL = new Error("the export queue is full: a span was dropped")
const QUEUE_CLOSED = new Error("the export queue is closed: a span was dropped")

/** A sealed batch: its export request, the items in it, and the bytes of those items (what a shared budget counts). */
interface Batch {
  readonly request: Buffer
  readonly items: number
  readonly body: number
}

/** Where an item goes: the queue's writer, between `open()` and `commit()`. */
export class ExportQueue {
  private readonly options: QueueOptions
  private readonly writer = new ProtoWriter(WRITER_BYTES)
  private openItems = 0
  /** Where the last committed item ends: an item written after it and never committed is cut off. */
  private committed = 0
  private readonly sealed: Array<Batch> = []
  private sealedItems = 0
  private sealedBytes = 0
  /** A send in flight, or a wait before the head batch is tried again. */
  private inFlight: Promise<void> | "waiting" | undefined
  /** Tries of the head batch that failed and may pass. */
  private retries = 0
  private retryTimer: ReturnType<typeof setTimeout> | undefined
  /** A flush or close is waiting: no failure is retried, no retry waited for. */
  private hurry = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private closed = false
  private idleWaiters: Array<() => void> = []

  constructor(options: QueueOptions) {
    this.options = options
  }

  /**
   * The writer to encode one item into (as field 2 of the scope message), or
   * undefined when the queue is full or closed (the item is dropped and
   * counted). Call `commit()` once the item is written.
   */
  open(): ProtoWriter | undefined {
    const { maxQueued, maxQueuedBytes, budget } = this.options
    this.writer.pos = this.committed
    const full = this.openItems + this.sealedItems >= maxQueued || this.committed + this.sealedBytes >= maxQueuedBytes ||
      (budget !== undefined && budget.used >= budget.max)
    if (this.closed || full) {
      this.options.onFailure(this.closed ? QUEUE_CLOSED : QUEUE_FULL)
      return undefined
    }
    return this.writer
  }

  /** The item written since `open()` is complete. */
  commit(): void {
    const { options } = this
    if (options.budget !== undefined) options.budget.used += this.writer.pos - this.committed
    this.committed = this.writer.pos
    this.openItems++
    if (options.immediate === true || this.openItems >= options.maxBatch || this.writer.pos >= options.maxBatchBytes) {
      this.seal()
      this.pump()
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined
        this.seal()
        this.pump()
      }, options.delayMs)
      this.timer.unref()
    }
  }

  /** Reports a failure of the queue's own (an item that could not be written). */
  report(error: unknown): void {
    this.options.onFailure(error)
  }

  /** Sends everything written so far; resolves when nothing is queued or in flight (or the queue gave up on it). */
  flush(): Promise<void> {
    this.seal()
    this.hurry = true
    if (this.retryTimer !== undefined) {
      clearTimeout(this.retryTimer)
      this.retryTimer = undefined
      this.inFlight = undefined
    }
    this.pump()
    if (this.inFlight === undefined && this.sealed.length === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Sends what is left and takes nothing more. */
  close(): Promise<void> {
    const flushed = this.flush()
    this.closed = true
    return flushed
  }

  private seal(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    if (this.openItems === 0) return
    const body = this.committed
    const request = exportRequest(this.options.head, this.writer.buf.subarray(0, body))
    this.sealed.push({ request, items: this.openItems, body })
    this.sealedItems += this.openItems
    this.sealedBytes += request.byteLength
    this.writer.reset()
    if (this.writer.buf.length > KEPT_WRITER_BYTES) this.writer.buf = Buffer.allocUnsafe(WRITER_BYTES)
    this.committed = 0
    this.openItems = 0
  }

  private pump(): void {
    if (this.options.immediate === true) return this.sendAll()
    if (this.inFlight !== undefined) return
    const next = this.sealed[0]
    if (next === undefined) {
      this.hurry = false
      for (const resolve of this.idleWaiters.splice(0)) resolve()
      return
    }
    const done = () => {
      this.sealed.shift()
      this.release(next)
      this.retries = 0
      this.inFlight = undefined
      this.pump()
    }
    let sent: Promise<void>
    try {
      sent = this.options.send(next.request)
    } catch (error) {
      sent = Promise.reject(error)
    }
    this.inFlight = sent.then(done, (error: unknown) => {
      this.options.onFailure(error)
      const delays = this.options.retryDelaysMs ?? RETRY_DELAYS_MS
      if (this.hurry || !retryable(error) || this.retries >= delays.length) return done()
      this.inFlight = "waiting"
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined
        this.inFlight = undefined
        this.pump()
      }, delays[this.retries++])
      this.retryTimer.unref()
    })
  }

  /** `immediate`: every sealed batch is handed over now, none waiting for another. */
  private sendAll(): void {
    for (const batch of this.sealed.splice(0)) {
      try {
        void this.options.send(batch.request).catch(this.options.onFailure)
      } catch (error) {
        this.options.onFailure(error)
      }
      this.release(batch)
    }
    for (const resolve of this.idleWaiters.splice(0)) resolve()
  }

  /** A batch has left (sent, or given up on): its room is free again. */
  private release(batch: Batch): void {
    this.sealedItems -= batch.items
    this.sealedBytes -= batch.request.byteLength
    if (this.options.budget !== undefined) this.options.budget.used -= batch.body
  }
}
