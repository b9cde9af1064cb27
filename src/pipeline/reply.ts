/**
 * Writing responses: JSON bodies and errors in the caller's envelope, always
 * with `x-request-id`. A response already started (a stream) is never written
 * twice: errors after the head go through the stream's own error frame.
 */
import { renderGatewayError, renderInfraError, renderUpstreamError } from "../domain/index.ts"
import type { AnyGatewayFailure, RenderedError } from "../domain/index.ts"
import type { Socket } from "node:net"
import type { RequestContext } from "./context.ts"

export const JSON_CONTENT_TYPE = "application/json"

/** How long, and how many more bytes, a connection closed after a refusal lingers. */
const LINGER_MS = 1000
const LINGER_BYTES = 8 * 1024 * 1024

/**
 * Closing a connection the caller is still writing to: our FIN goes out but
 * the socket is not destroyed at once (which would reset it, and a reset can
 * make the caller lose the answer it has not read yet). Reading stops, and the
 * socket is destroyed after `LINGER_MS`, or as soon as `LINGER_BYTES` more
 * arrived: never the gigabyte the caller declared.
 */
const lingerThenClose = (socket: Socket | null | undefined): void => {
  if (socket == null) return
  socket.destroySoon = function(this: Socket) {
    this.end()
    this.pause()
    const start = this.bytesRead
    const watch = setInterval(() => {
      if (this.bytesRead - start > LINGER_BYTES) this.destroy()
    }, 50)
    const stop = setTimeout(() => this.destroy(), LINGER_MS)
    watch.unref()
    stop.unref()
    this.once("close", () => {
      clearInterval(watch)
      clearTimeout(stop)
    })
  }
}

/** A request body is declared and not yet all received. */
const bodyPending = (ctx: RequestContext): boolean => {
  const { req } = ctx
  if (req.complete) return false
  return req.headers["transfer-encoding"] !== undefined || (req.headers["content-length"] !== undefined && req.headers["content-length"] !== "0")
}

export const sendBody = (
  ctx: RequestContext,
  status: number,
  body: string | Uint8Array,
  /** Undefined only to forward an upstream body that came without one. */
  contentType: string | undefined,
  headers?: Readonly<Record<string, string>>
): void => {
  const { res } = ctx
  if (res.headersSent || res.destroyed) return
  const flat = [
    "content-length",
    String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength),
    "x-request-id",
    ctx.requestId
  ]
  // Answered before the body was read to its end (a refusal): close rather than read the rest.
  if (bodyPending(ctx)) {
    flat.push("connection", "close")
    lingerThenClose(res.socket)
  }
  if (contentType !== undefined) flat.push("content-type", contentType)
  // Anthropic SDKs read an error's id from `request-id` (`err.requestID`): the same id as `x-request-id`.
  if (status >= 400 && ctx.caller === "anthropic") flat.push("request-id", ctx.requestId)
  if (headers !== undefined) for (const name in headers) flat.push(name, headers[name])
  res.writeHead(status, flat)
  res.end(body)
}

export const sendJson = (
  ctx: RequestContext,
  status: number,
  value: unknown,
  headers?: Readonly<Record<string, string>>
): void => sendBody(ctx, status, JSON.stringify(value), JSON_CONTENT_TYPE, headers)

export const renderFailure = (ctx: RequestContext, failure: AnyGatewayFailure): RenderedError => {
  switch (failure._tag) {
    case "UpstreamError":
      return renderUpstreamError(failure, ctx.caller, ctx.requestId)
    case "GatewayError":
      return renderGatewayError(failure, ctx.caller, ctx.requestId)
    case "InfraError":
      return renderInfraError(failure, ctx.caller, ctx.requestId)
  }
}

export const sendFailure = (ctx: RequestContext, failure: AnyGatewayFailure): void => {
  const rendered = renderFailure(ctx, failure)
  ctx.log.error_code = failure._tag === "UpstreamError" ? failure.reason : failure.code
  if (failure._tag === "UpstreamError") ctx.log.provider = failure.provider
  sendBody(ctx, rendered.status, rendered.body, rendered.contentType, rendered.headers)
}
