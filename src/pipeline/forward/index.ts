/**
 * Forwarding between caller and upstream, shared by every program: which
 * headers cross, the caller's key policy, writing heads and bodies, and the
 * verbatim body forwarder.
 */
export { callerKey, callerKeyPolicy, passThroughHeaders, requestCredential, responseHeaders, translatedHeaders } from "./headers.ts"
export { callerSink, commitHead, SSE_HEADERS, writeText } from "./sink.ts"
export {
  EVENT_HOLD_CAP,
  forwardHeld,
  forwardStream,
  HOLD_LIMIT,
  inBandFailure,
  isEventStream,
  isJson,
  OPEN_GATE
} from "./verbatim.ts"
export type { Forwarded, StreamBreak, StreamGate } from "./verbatim.ts"
