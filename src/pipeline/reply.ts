/**
 * Writing responses: JSON bodies and errors in the caller's envelope, always
 * with `x-request-id`. A response already started (a stream) is never written
 * twice: errors after the head go through the stream's own error frame.
 */
import { renderGatewayError, renderInfraError, renderUpstreamError } from "../domain/index.ts"
import type { AnyGatewayFailure, RenderedError } from "../domain/index.ts"
import type { RequestContext } from "./context.ts"

export const JSON_CONTENT_TYPE = "application/json"

/** A request body is declared and not yet all received. */
export const bodyPending = (ctx: RequestContext): boolean => {
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
  if (bodyPending(ctx)) flat.push("connection", "close")
  if (contentType !== undefined) flat.push("content-type", contentType)
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
      return renderUpstreamError(failure, ctx.caller)
    case "GatewayError":
      return renderGatewayError(failure, ctx.caller)
    case "InfraError":
      return renderInfraError(failure, ctx.caller)
  }
}

export const sendFailure = (ctx: RequestContext, failure: AnyGatewayFailure): void => {
  const rendered = renderFailure(ctx, failure)
  ctx.log.error_code = failure._tag === "UpstreamError" ? failure.reason : failure.code
  if (failure._tag === "UpstreamError") ctx.log.provider = failure.provider
  sendBody(ctx, rendered.status, rendered.body, rendered.contentType, rendered.headers)
}
