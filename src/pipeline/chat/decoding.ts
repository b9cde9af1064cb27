/**
 * Reading an upstream chat stream of any family as canonical events: the
 * codec's framer (SSE, or Bedrock's binary event stream) and stream decoder,
 * chunk by chunk. Shared by the normalized path's stage and a continuation's.
 */
import type { ChatStreamEvent, StreamError } from "../../domain/index.ts"
import type { ProviderCodec, StreamDecoder } from "../../formats/index.ts"
import { framerFor } from "../../providers/framing.ts"
import type { Framer } from "../../providers/framing.ts"
import type { ChunkOut, StreamStage } from "../forward/index.ts"

/** The largest single event the translated path reads (the SSE parser's line limit). */
const MAX_EVENT_MIB = 16

/** The canonical events of an upstream chunk; an event over the parser's limit breaks the stream. */
const upstreamEvents = (parser: Framer, decoder: StreamDecoder, chunk: Uint8Array): Array<ChatStreamEvent> => {
  const events: Array<ChatStreamEvent> = []
  for (const sse of parser.push(chunk)) for (const event of decoder.push(sse)) events.push(event)
  if (parser.overflowed) {
    events.push({ type: "error", error: { type: "api_error", message: `upstream sent a stream event over ${MAX_EVENT_MIB} MiB`, status: 502, malformed: true } })
  }
  return events
}

/** The canonical events at the upstream's end (an `error` when it ended before its terminal event). */
const lastUpstreamEvents = (parser: Framer, decoder: StreamDecoder): Array<ChatStreamEvent> => {
  const events: Array<ChatStreamEvent> = []
  for (const sse of parser.end()) for (const event of decoder.push(sse)) events.push(event)
  for (const event of decoder.end()) events.push(event)
  return events
}

/**
 * The stage of a translated stream: SSE decode, canonical events, encoded in
 * the caller's format, one pull's chunks at a time. The answer commits with
 * the first event that carries content or the finish (`commitsResponse`, the
 * rule of every path): the preamble alone commits nothing, so an upstream
 * that sends `message_start` and then `overloaded_error` is still a failed
 * attempt.
 */
/**
 * A stage over an upstream stream of `codec`'s family: each chunk's canonical
 * events go to `emit`, which writes the caller's bytes and judges the commit.
 */
export const decodingStage = (
  codec: ProviderCodec,
  emit: (events: ReadonlyArray<ChatStreamEvent>, out: ChunkOut) => "hold" | "commit" | "end" | StreamError,
  stop: NonNullable<StreamStage["stop"]>
): StreamStage => {
  const parser = framerFor(codec.framing)
  const decoder = codec.streamDecoder()
  return {
    push: (chunk, out) => emit(upstreamEvents(parser, decoder, chunk), out),
    end: (out) => {
      const verdict = emit(lastUpstreamEvents(parser, decoder), out)
      return typeof verdict === "object" ? verdict : "end"
    },
    stop
  }
}
