/**
 * A chat answer from the cache, in the caller's format: a non-streamed hit
 * whose answer was stored as the caller got it goes out byte for byte; any
 * other hit is encoded from the stored canonical answer, as a JSON body or as
 * a stream of the caller's own events (a streamed answer can serve a
 * non-streaming request, and the reverse). The canonical request and the
 * stored canonical answer are only decoded for the latter.
 */
import { Stream } from "effect"
import type { CallerFormat, ChatRequest } from "../../domain/index.ts"
import { CALLER_CODECS, responseEvents } from "../../formats/index.ts"
import { hitHeaders } from "../cache/index.ts"
import type { CacheEntry, CachedChat } from "../cache/index.ts"
import type { RequestContext } from "../context.ts"
import { SSE_HEADERS } from "../forward/index.ts"
import { bodyReply, JSON_CONTENT_TYPE, reply } from "../reply.ts"
import type { Reply } from "../reply.ts"

/**
 * The answer from the entry; undefined when there is none (the request or the
 * stored answer does not decode), and the request goes upstream instead. A
 * replayed stream is whole: its body is a stream of one chunk.
 */
export const replayChat = (
  ctx: RequestContext,
  caller: CallerFormat,
  stream: boolean,
  entry: CacheEntry & CachedChat,
  request: () => ChatRequest | undefined
): Reply | undefined => {
  const headers = hitHeaders(entry)
  if (!stream && entry.body !== undefined) return bodyReply(ctx, entry.body.status, entry.body.bytes, entry.body.contentType, headers)
  const decoded = request()
  const response = decoded === undefined ? undefined : entry.response()
  if (decoded === undefined || response === undefined) return undefined
  const codec = CALLER_CODECS[caller]
  if (stream) {
    const encoder = codec.streamEncoder(decoded)
    let frames = ""
    const events = responseEvents(response)
    for (const event of events) frames += encoder.push(event)
    const tap = ctx.tapEvents === true ? { take: () => events.splice(0) } : undefined
    return reply(200, { ...SSE_HEADERS, ...headers }, Stream.succeed(Buffer.from(frames)), tap)
  }
  return bodyReply(ctx, 200, JSON.stringify(codec.encodeResponse(response, decoded)), JSON_CONTENT_TYPE, headers)
}
