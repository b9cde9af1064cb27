/**
 * The request context of a request that came over HTTP: the pipeline's
 * context with the Node request and response themselves, for what only the
 * edge and ingress do (reading and streaming bodies, sockets).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { RequestContext } from "../pipeline/index.ts"

export interface HttpRequestContext extends RequestContext {
  readonly req: IncomingMessage
  readonly res: ServerResponse
}
