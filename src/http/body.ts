/**
 * Reading JSON request bodies whole, up to `server.max_body_bytes`
 * (413 beyond, and the connection closed rather than the rest read), parsed
 * once (400 when malformed, too deep, with an out-of-range number or a
 * routing key given twice). Only a JSON content type is accepted (415
 * otherwise), so a web page cannot post a "simple" cross-origin request that
 * spends the gateway's keys. Multipart and passthrough bodies are never read
 * here; they stream straight to the upstream.
 */
import { Effect } from "effect"
import { clip, GatewayError } from "../domain/index.ts"
import { header } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import { duplicateRoutingKey, jsonProblem } from "./json-guard.ts"

/**
 * Reads the whole body (bounded), then hands it to `finish` within the same
 * callback: one async step per request, however the body is interpreted.
 */
const collect = <A>(
  ctx: HttpRequestContext,
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

/** The whole body as bytes, bounded (a SigV4 passthrough signs over them before sending). */
export const readWholeBody = (ctx: HttpRequestContext, limit: number): Effect.Effect<Buffer, GatewayError> =>
  collect(ctx, limit, Effect.succeed)

/** 413; the response closes the connection (`sendBody`), so the rest of the body is never read. */
const tooLarge = (limit: number) =>
  new GatewayError({ status: 413, code: "request_too_large", message: `request body exceeds ${limit} bytes` })

const JSON_TYPE = /^\s*application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/** 415 unless the body is declared JSON (`application/json`, `application/*+json`, any charset). */
const requireJsonType = (ctx: HttpRequestContext): GatewayError | undefined => {
  const type = header(ctx, "content-type")
  if (type !== undefined && JSON_TYPE.test(type)) return undefined
  return new GatewayError({
    status: 415,
    code: "unsupported_media_type",
    message: `${ctx.path} takes a JSON body: send content-type: application/json${type === undefined ? "" : ` (got ${clip(type, 128)})`}`
  })
}

const invalid = (message: string) => new GatewayError({ status: 400, code: "invalid_request", message })

/** A JSON object body; anything else (array, number, malformed) is a 400. */
export const readJsonObject = (
  ctx: HttpRequestContext,
  limit: number
): Effect.Effect<{ readonly raw: Buffer; readonly json: Record<string, unknown> }, GatewayError> => {
  const wrongType = requireJsonType(ctx)
  if (wrongType !== undefined) return Effect.fail(wrongType)
  return collect(ctx, limit, (raw) => {
    if (raw.byteLength === 0) return Effect.fail(invalid("request body is empty; expected a JSON object"))
    const text = raw.toString("utf8")
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (cause) {
      return Effect.fail(invalid(`request body is not valid JSON: ${clip((cause as Error).message, 200)}`))
    }
    if (typeof json !== "object" || json === null || Array.isArray(json)) return Effect.fail(invalid("request body must be a JSON object"))
    const problem = jsonProblem(json)
    if (problem !== undefined) return Effect.fail(invalid(problem))
    const duplicate = duplicateRoutingKey(raw, text)
    if (duplicate !== undefined) return Effect.fail(invalid(`"${duplicate}" is given twice at the top level of the body; send it once`))
    return Effect.succeed({ raw, json: json as Record<string, unknown> })
  })
}
