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
import { bodyRead } from "./reclaim.ts"

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
    // A body of one chunk (most) is kept as it came. A longer one with a declared length is
    // copied into one buffer of that length as it arrives, so that each chunk is garbage at
    // once and dies young: kept in a list until the end, the chunks of a 10 MB body outlived
    // scavenges, went to the old generation and held their memory (malloc's, outside the
    // V8 heap) until a full GC, long after the request. Without a declared length the
    // chunks are listed and joined at the end.
    let first: Buffer | undefined
    let whole: Buffer | undefined
    let chunks: Array<Buffer> | undefined
    let size = 0
    const onData = (chunk: Buffer) => {
      const at = size
      size += chunk.byteLength
      if (size > limit) {
        cleanup()
        resume(Effect.fail(tooLarge(limit)))
        return
      }
      if (first === undefined && whole === undefined && chunks === undefined) {
        first = chunk
        return
      }
      if (first !== undefined) {
        if (declared >= size) {
          whole = Buffer.allocUnsafeSlow(declared)
          whole.set(first, 0)
        } else chunks = [first]
        first = undefined
      }
      if (whole !== undefined) whole.set(chunk, at)
      else chunks!.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      const body = first ??
        (whole !== undefined ? whole.subarray(0, size) : chunks !== undefined ? Buffer.concat(chunks, size) : Buffer.alloc(0))
      first = whole = chunks = undefined
      bodyRead(size)
      resume(finish(body))
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
