/** The inline security stage: the Guardrail service, its compiled policy, and what it scans. */
export { compileGuardPolicy, Guardrail, inputViolationError, outputViolationError } from "./Guardrail.ts"
export type { GuardPolicy, RecordedScan, SecuritySection, Violation } from "./Guardrail.ts"
export { PII_CATEGORIES } from "./pii.ts"
export type { PiiCategory } from "./pii.ts"
export type { Surface } from "./surfaces.ts"
