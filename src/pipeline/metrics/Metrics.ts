/**
 * The Prometheus metrics stage (`[metrics]`): counters and histograms of the
 * requests the gateway served, scraped as Prometheus text at `GET /metrics`
 * (prom-client's registry and exposition format).
 *
 * Details
 * - A request is recorded once, by the edge, when its response closes, from
 *   the fields its log line carries (`RequestFields`): nothing is counted
 *   on the way, so the stages never see this one.
 * - Label sets are bounded: `model`, `route` and `provider` are configured
 *   names only (the pipeline notes a model once it resolved, never a raw
 *   caller string), `endpoint` is the matched route's template
 *   (`/v1/files/{file_id}`, `unmatched` for none), `status` a status code,
 *   `error_class` the error code the log line has (a fixed vocabulary).
 * - The label children of every combination seen are kept in maps, so a
 *   request costs a few map lookups and additions, not prom-client's label
 *   hashing.
 * - Open streams and the dependencies' health are read when scraped (gauges
 *   with `collect`), never per request.
 * - `layerOff` records nothing and loads nothing (prom-client is imported by
 *   `live.ts`, which only `layer` loads); the edge then has no recorder at all.
 */
import { Context, Effect, Layer } from "effect"
import type { MetricsShape } from "./shape.ts"

export type { DependencyCheck, MetricsShape, RecordRequest, RequestFields } from "./shape.ts"

export class Metrics extends Context.Service<Metrics, MetricsShape>()("gateway/pipeline/metrics/Metrics") {
  /**
   * Metrics on: a registry of its own (never prom-client's global one), loaded
   * with the layer; `clusterWorker`: a scrape answers the sum over every worker.
   */
  static readonly layer = (options: { readonly clusterWorker: boolean } = { clusterWorker: false }): Layer.Layer<Metrics> =>
    Layer.effect(
      Metrics,
      Effect.map(Effect.promise(() => import("./live.ts")), ({ makeLiveMetrics }) => makeLiveMetrics(options))
    )

  /** Metrics off: nothing recorded, nothing loaded, `/metrics` not served. */
  static readonly layerOff: Layer.Layer<Metrics> = Layer.succeed(Metrics, {
    record: undefined,
    scrape: Effect.succeed({ contentType: "text/plain", body: "" }),
    watchOpenStreams: () => {},
    watchDependencies: () => {}
  })
}
