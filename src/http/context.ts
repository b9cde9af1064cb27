/**
 * The request context of a request that came in as HTTP (over a socket, or in
 * memory for the library): the pipeline's context with the Node request
 * itself, for what only ingress does (reading and streaming bodies). The
 * edge's context adds the socket's response, which only the reply's writer
 * and the edge touch.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { RequestContext } from "../pipeline/index.ts"

export interface HttpRequestContext extends RequestContext {
  readonly req: IncomingMessage
}

/** A request served on a socket: the response the reply's writer writes. */
export interface EdgeContext extends HttpRequestContext {
  readonly res: ServerResponse
  /** The writer is sending a stream body (its head is out, its end not yet). */
  streaming?: boolean | undefined
}
