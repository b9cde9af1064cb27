/**
 * A chat answer from the cache, in the caller's format: a non-streamed hit
 * whose answer was stored as the caller got it goes out byte for byte; any
 * other hit is encoded from the stored canonical answer, as a JSON body or as
 * a stream of the caller's own events (a streamed answer can serve a
 * non-streaming request, and the reverse). The canonical request and the
 * stored canonical answer are only decoded for the latter.
 */
import type { CallerFormat, ChatRequest } from "../../domain/index.ts"
import { CALLER_CODECS, responseEvents } from "../../formats/index.ts"
import { hitHeaders } from "../cache/index.ts"
import type { CacheEntry, CachedChat } from "../cache/index.ts"
import type { RequestContext } from "../context.ts"
import { commitHead, SSE_HEADERS } from "../forward/index.ts"
import { JSON_CONTENT_TYPE, sendBody } from "../reply.ts"

/**
 * Answers from the entry; false when it cannot (the request or the stored
 * answer does not decode), and the request goes upstream instead.
 */
export const replayChat = (
  ctx: RequestContext,
  caller: CallerFormat,
  stream: boolean,
  entry: CacheEntry & CachedChat,
  request: () => ChatRequest | undefined
): boolean => {
  const headers = hitHeaders(entry)
  if (!stream && entry.body !== undefined) {
    sendBody(ctx, entry.body.status, entry.body.bytes, entry.body.contentType, headers)
    return true
  }
  const decoded = request()
  const response = decoded === undefined ? undefined : entry.response()
  if (decoded === undefined || response === undefined) return false
  const codec = CALLER_CODECS[caller]
  if (stream) {
    const encoder = codec.streamEncoder(decoded)
    let frames = ""
    for (const event of responseEvents(response)) frames += encoder.push(event)
    ctx.streamFormat = caller
    commitHead(ctx, 200, { ...SSE_HEADERS, ...headers })
    ctx.res.end(frames)
    return true
  }
  sendBody(ctx, 200, JSON.stringify(codec.encodeResponse(response, decoded)), JSON_CONTENT_TYPE, headers)
  return true
}
