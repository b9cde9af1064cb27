export { CANCELLED, hasLimits, Limits, makeLimits, resetText } from "./Limits.ts"
export type { Admission, Estimate, LimitsShape, LimitSubject, RunScript, Script, Usage } from "./Limits.ts"
