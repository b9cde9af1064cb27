/**
 * Reading JSON request bodies whole, up to `server.max_body_bytes`
 * (413 beyond), parsed once (400 when malformed). Multipart and passthrough
 * bodies are never read here; they stream straight to the upstream.
 */
import { Effect } from "effect"
import { GatewayError } from "../domain/index.ts"
import type { RequestContext } from "../pipeline/index.ts"

/**
 * Reads the whole body (bounded), then hands it to `finish` within the same
 * callback: one async step per request, however the body is interpreted.
 */
const collect = <A>(
  ctx: RequestContext,
  limit: number,
  finish: (body: Buffer) => Effect.Effect<A, GatewayError>
): Effect.Effect<A, GatewayError> =>
  Effect.callback<A, GatewayError>((resume) => {
    const { req } = ctx
    const declared = Number(req.headers["content-length"])
    if (declared > limit) {
      resume(Effect.fail(tooLarge(limit)))
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > limit) {
        cleanup()
        req.resume()
        resume(Effect.fail(tooLarge(limit)))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(finish(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(new GatewayError({ status: 400, code: "invalid_request", message: "request body could not be read" })))
    }
    const cleanup = () => {
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onError)
    }
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", onError)
    return Effect.sync(cleanup)
  })

const tooLarge = (limit: number) =>
  new GatewayError({ status: 413, code: "request_too_large", message: `request body exceeds ${limit} bytes` })

const invalid = (message: string) => new GatewayError({ status: 400, code: "invalid_request", message })

/** A JSON object body; anything else (array, number, malformed) is a 400. */
export const readJsonObject = (
  ctx: RequestContext,
  limit: number
): Effect.Effect<{ readonly raw: Buffer; readonly json: Record<string, unknown> }, GatewayError> =>
  collect(ctx, limit, (raw) => {
    if (raw.byteLength === 0) return Effect.fail(invalid("request body is empty; expected a JSON object"))
    let json: unknown
    try {
      json = JSON.parse(raw.toString("utf8"))
    } catch (cause) {
      return Effect.fail(invalid(`request body is not valid JSON: ${(cause as Error).message}`))
    }
    return typeof json === "object" && json !== null && !Array.isArray(json)
      ? Effect.succeed({ raw, json: json as Record<string, unknown> })
      : Effect.fail(invalid("request body must be a JSON object"))
  })
