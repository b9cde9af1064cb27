/**
 * The head of an event stream the gateway answers with. Writing to the caller
 * is the reply writer's alone (src/http/write-reply.ts).
 */
import type { ReplyHeaders } from "../reply.ts"

export const SSE_HEADERS: ReplyHeaders = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}
