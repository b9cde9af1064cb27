/**
 * The GenAI metrics of one export pipeline (gen-ai-metrics conventions):
 * `gen_ai.client.token.usage` by token type, `gen_ai.client.operation.duration`
 * (with `error.type` on failures) and, for streams,
 * `gen_ai.server.time_to_first_token`.
 *
 * The series of one call's attribute set are made together on its first call
 * and found again by one lookup on what determines those attributes.
 */
import { HistogramInstrument } from "../../../otlp/metrics.ts"
import type { Series } from "../../../otlp/metrics.ts"
import type { ProtoWriter } from "../../../otlp/protobuf.ts"
import { BUCKETS, ERROR_TYPE, GEN_AI, METRIC } from "./attributes.ts"
import { calleeKey, genAiMetricAttributes, identityOf, sameCallee, timeToFirstTokenOf } from "./call.ts"
import type { GenAiCall } from "./call.ts"
import type { Attributes } from "./request.ts"

interface Group {
  readonly attributes: Attributes
  readonly duration: Series
  readonly inputTokens: Series
  readonly outputTokens: Series
  readonly timeToFirstToken: Series
  /** Durations of failed calls, by `error.type`. */
  readonly failures: Map<string, Series>
}

export class GenAiMetrics {
  private readonly tokenUsage = new HistogramInstrument({
    name: METRIC.tokenUsage,
    unit: "{token}",
    description: "Number of input and output tokens used.",
    boundaries: BUCKETS.tokenUsage
  })
  private readonly duration = new HistogramInstrument({
    name: METRIC.operationDuration,
    unit: "s",
    description: "GenAI operation duration.",
    boundaries: BUCKETS.operationDuration
  })
  private readonly timeToFirstToken = new HistogramInstrument({
    name: METRIC.timeToFirstToken,
    unit: "s",
    description: "Time from the start of the response to the first content token of a stream.",
    boundaries: BUCKETS.timeToFirstToken
  })
  private readonly groups = new Map<string, Group>()
  /** The group recorded last and the call it was for (identity fields only): most calls repeat it, found without a key. */
  private last: { readonly call: GenAiCall; readonly group: Group } | undefined

  record(call: GenAiCall): void {
    const last = this.last
    let group: Group
    if (last !== undefined && sameCallee(last.call, call) && last.call.response?.model === call.response?.model) group = last.group
    else {
      group = this.groupOf(call)
      this.last = { call: identityOf(call), group }
    }
    this.add(group, call)
  }

  private groupOf(call: GenAiCall): Group {
    // Everything the metric attributes are derived from, so equal keys mean equal attribute sets.
    const key = `${calleeKey(call)}\u0001${call.response?.model ?? ""}`
    let group = this.groups.get(key)
    if (group === undefined) {
      const attributes = genAiMetricAttributes(call)
      group = {
        attributes,
        duration: this.duration.newSeries(attributes),
        inputTokens: this.tokenUsage.newSeries({ ...attributes, [GEN_AI.tokenType]: "input" }),
        outputTokens: this.tokenUsage.newSeries({ ...attributes, [GEN_AI.tokenType]: "output" }),
        timeToFirstToken: this.timeToFirstToken.newSeries(attributes),
        failures: new Map()
      }
      this.groups.set(key, group)
    }
    return group
  }

  private add(group: Group, call: GenAiCall): void {
    const seconds = Math.max(0, call.timing.endedAt - call.timing.startedAt) / 1000
    if (call.error === undefined) group.duration.add(seconds)
    else {
      let failed = group.failures.get(call.error)
      if (failed === undefined) {
        failed = this.duration.newSeries({ ...group.attributes, [ERROR_TYPE]: call.error })
        group.failures.set(call.error, failed)
      }
      failed.add(seconds)
    }
    const usage = call.response?.usage
    if (usage !== undefined) {
      group.inputTokens.add(usage.inputTokens)
      // Embeddings produce no output tokens (the conventions record only input tokens for them).
      if (call.operation !== "embeddings") group.outputTokens.add(usage.outputTokens)
    }
    const ttft = timeToFirstTokenOf(call)
    if (ttft !== undefined) group.timeToFirstToken.add(ttft)
  }

  /** Whether anything was recorded. */
  get empty(): boolean {
    return this.groups.size === 0
  }

  /** Every metric with a recorded value, as `Metric`s of one scope, counted from `startNs`. */
  write(w: ProtoWriter, startNs: bigint, timeNs: bigint): void {
    this.tokenUsage.write(w, startNs, timeNs)
    this.duration.write(w, startNs, timeNs)
    this.timeToFirstToken.write(w, startNs, timeNs)
  }
}
