/** The Prometheus metrics stage (`[metrics]`). */
export { Metrics } from "./Metrics.ts"
export type { DependencyCheck, MetricsShape, RecordRequest, RequestFields } from "./Metrics.ts"
