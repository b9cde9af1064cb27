/**
 * Forwarding between caller and upstream, shared by every program: which
 * headers cross, the caller's key policy, the commit rule of streamed
 * answers, and the verbatim body forwarder.
 */
export { bearerKey, callerKey, callerKeyPolicy, passThroughHeaders, requestCredential, responseHeaders, translatedHeaders } from "./headers.ts"
export { commitStream, firstContentWithin, holdBody, stopFrame } from "./commit.ts"
export type { ChunkOut, StageVerdict, StreamStage, StreamStop } from "./commit.ts"
export { SSE_HEADERS } from "./sink.ts"
export {
  EVENT_HOLD_CAP,
  forwardHeld,
  forwardStage,
  forwardStream,
  heldStage,
  HOLD_LIMIT,
  inBandFailure,
  isEventStream,
  isJson,
  OPEN_GATE
} from "./verbatim.ts"
export type { Forwarded, StreamBreak, StreamGate } from "./verbatim.ts"
