/**
 * Metrics in workers mode: every worker counts its own requests, and a
 * scrape of the shared port (which reaches one worker) answers the sum over
 * all of them. The worker asks the primary over the cluster's IPC channel;
 * the primary collects every worker's registry with prom-client's
 * `AggregatorRegistry` (counters and histograms summed, gauges as each
 * declares) and sends the text back.
 *
 * Details
 * - Loaded only in workers mode with metrics on: by the primary
 *   (`servePrimaryMetrics`) and by each worker's metrics (`workerScrape`).
 * - A primary that does not answer within 6 s (it is stopping) leaves the
 *   worker to answer with its own counters.
 */
import type { Cluster } from "node:cluster"
import { AggregatorRegistry } from "prom-client"
import type { Registry } from "prom-client"

const SCRAPE = "gateway:metrics-scrape"
const SCRAPED = "gateway:metrics-scraped"
const ANSWER_TIMEOUT_MS = 6_000

interface ScrapeMessage {
  readonly type: typeof SCRAPE
  readonly id: number
}

interface ScrapedMessage {
  readonly type: typeof SCRAPED
  readonly id: number
  readonly text: string | undefined
}

const isMessage = <T extends { readonly type: string }>(type: string) => (message: unknown): message is T =>
  typeof message === "object" && message !== null && (message as { type?: unknown }).type === type

/** The primary: answers each worker's scrape with every worker's metrics, summed. */
export const servePrimaryMetrics = (cluster: Cluster): void => {
  const aggregator = new AggregatorRegistry()
  cluster.on("message", (worker, message: unknown) => {
    if (!isMessage<ScrapeMessage>(SCRAPE)(message)) return
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: SCRAPED, id: message.id, text } satisfies ScrapedMessage),
      () => worker.send({ type: SCRAPED, id: message.id, text: undefined } satisfies ScrapedMessage)
    )
  })
}

/**
 * A worker: `registry` is what the primary collects from this process, and
 * the returned scrape asks the primary for everyone's (this worker's own
 * counters when the primary does not answer).
 */
export const workerScrape = (registry: Registry): () => Promise<string> => {
  // Answers the primary's collection requests with this registry.
  new AggregatorRegistry()
  AggregatorRegistry.setRegistries([registry])
  let next = 0
  const waiting = new Map<number, (text: string | undefined) => void>()
  process.on("message", (message: unknown) => {
    if (!isMessage<ScrapedMessage>(SCRAPED)(message)) return
    waiting.get(message.id)?.(message.text)
    waiting.delete(message.id)
  })
  return () =>
    new Promise<string | undefined>((resolve) => {
      const id = next++
      const timer = setTimeout(() => {
        waiting.delete(id)
        resolve(undefined)
      }, ANSWER_TIMEOUT_MS)
      waiting.set(id, (text) => {
        clearTimeout(timer)
        resolve(text)
      })
      process.send!({ type: SCRAPE, id } satisfies ScrapeMessage)
    }).then((text) => text ?? registry.metrics())
}
