/**
 * A request body streamed upstream (file uploads, native passthrough) with its
 * size counted as it passes: past the limit the stream fails, the upstream
 * request is aborted with it, and the caller gets 413 (and a closed
 * connection, so the rest is never read). A declared length over the limit is
 * refused before anything is sent.
 */
import type { IncomingHttpHeaders, IncomingMessage } from "node:http"
import { Transform } from "node:stream"
import { GatewayError } from "../domain/index.ts"
import { bodyRead } from "./reclaim.ts"

export interface LimitedBody {
  readonly stream: Transform
  /** Whether the body passed the limit (the upstream request failed because of it). */
  readonly exceeded: () => boolean
}

/** A request with a body: a declared non-zero length or a chunked body. */
export const hasBody = (headers: IncomingHttpHeaders): boolean =>
  headers["transfer-encoding"] !== undefined || (headers["content-length"] !== undefined && headers["content-length"] !== "0")

export const bodyTooLarge = (limit: number, setting: string): GatewayError =>
  new GatewayError({ status: 413, code: "request_too_large", message: `the request body exceeds ${limit} bytes (${setting})` })

export const limitedBody = (req: IncomingMessage, limit: number): LimitedBody => {
  let size = 0
  let exceeded = false
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.byteLength
      if (size > limit) {
        exceeded = true
        req.unpipe(stream)
        done(new Error("request body over the limit"))
        return
      }
      done(null, chunk)
    },
    flush(done) {
      bodyRead(size)
      done()
    }
  })
  req.pipe(stream)
  return { stream, exceeded: () => exceeded }
}
