/**
 * The telemetry stage's public face: the `Telemetry` service (application
 * trace and GenAI telemetry), the span helpers every stage uses, the GenAI
 * call record and its builders.
 */
export type { GenAiOperation } from "./genai/attributes.ts"
export type { GenAiCall, GenAiTiming, GenAiUpstream } from "./genai/call.ts"
export { embeddingsRequestAttributes } from "./genai/request.ts"
export type { GenAiRequest } from "./genai/request.ts"
export type { GenAiResponseSummary } from "./genai/response.ts"
export { telemetrySettingsOf } from "./settings.ts"
export type { ExportCredential, TelemetrySettings } from "./settings.ts"
export { ATTR } from "./names.ts"
export { annotateResolved, endServerSpan, inAttemptSpan, inCacheLookupSpan, inGuardrailSpan, inResolveSpan, startServerSpan, withServerSpan } from "./spans.ts"
export type { AttemptSpanInfo, ServerSpanRequest, ServerSpanStart } from "./spans.ts"
export { Telemetry } from "./Telemetry.ts"
export type { TelemetryShape } from "./Telemetry.ts"
