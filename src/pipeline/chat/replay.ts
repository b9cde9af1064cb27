/**
 * A chat answer from the cache, in the caller's format: a non-streamed hit
 * whose answer was stored as the caller got it goes out byte for byte; any
 * other hit is encoded from the stored canonical answer, as a JSON body or as
 * a stream of the caller's own events (a streamed answer can serve a
 * non-streaming request, and the reverse).
 */
import type { CallerFormat, ChatRequest } from "../../domain/index.ts"
import { CALLER_CODECS, responseEvents } from "../../formats/index.ts"
import { hitHeaders } from "../cache/index.ts"
import type { CacheEntry, CachedChat } from "../cache/index.ts"
import type { RequestContext } from "../context.ts"
import { commitHead, SSE_HEADERS } from "../forward/index.ts"
import { JSON_CONTENT_TYPE, sendBody } from "../reply.ts"

export const replayChat = (
  ctx: RequestContext,
  caller: CallerFormat,
  stream: boolean,
  entry: CacheEntry & CachedChat,
  request: ChatRequest
): void => {
  const headers = hitHeaders(entry)
  const codec = CALLER_CODECS[caller]
  if (stream) {
    const encoder = codec.streamEncoder(request)
    let frames = ""
    for (const event of responseEvents(entry.response)) frames += encoder.push(event)
    ctx.streamFormat = caller
    commitHead(ctx, 200, { ...SSE_HEADERS, ...headers })
    ctx.res.end(frames)
    return
  }
  if (entry.body !== undefined) {
    sendBody(ctx, entry.body.status, entry.body.bytes, entry.body.contentType, headers)
    return
  }
  sendBody(ctx, 200, JSON.stringify(codec.encodeResponse(entry.response, request)), JSON_CONTENT_TYPE, headers)
}
