/**
 * Forwarding between caller and upstream, shared by every program: which
 * headers cross, the caller's key policy, writing heads and bodies, and the
 * verbatim body forwarder.
 */
export { callerKey, callerKeyPolicy, passThroughHeaders, responseHeaders, translatedHeaders } from "./headers.ts"
export { abortWithCaller, callerSink, commitHead, SSE_HEADERS, writeText } from "./sink.ts"
export { forwardVerbatim, isEventStream } from "./verbatim.ts"
export type { BodyTap } from "./verbatim.ts"
