/**
 * Claude on Vertex AI (`publisher = "anthropic"`): Vertex's `rawPredict` /
 * `streamRawPredict` take the Anthropic Messages body with two differences,
 * applied here to the request's final bytes just before it goes out (the same
 * hook SigV4 signs with, so neither the translated nor the caller's own body
 * is built differently): no `model` field (the model is in the URL) and
 * `anthropic_version: "vertex-2023-10-16"` in the body instead of the
 * `anthropic-version` header. A Google bearer hook, when the provider has
 * Google credentials, adds its header after.
 */
import type { SignRequest } from "./sigv4.ts"

export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"

const EMPTY: Readonly<Record<string, string>> = Object.freeze({})

/** The body Vertex expects from an Anthropic Messages body; a body that is not a JSON object goes unchanged (the upstream refuses it). */
export const vertexAnthropicBody = (body: string | Uint8Array): string | undefined => {
  let json: unknown
  try {
    json = JSON.parse(typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8"))
  } catch {
    return undefined
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined
  const { model: _model, anthropic_version: _version, ...rest } = json as Record<string, unknown>
  return JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest })
}

/** The request hook of a chat call to Claude on Vertex: the body rewritten, then `bearer`'s headers when given. */
export const vertexAnthropicHook = (bearer: SignRequest | undefined): SignRequest => async (request) => {
  const body = vertexAnthropicBody(request.body) ?? request.body
  const headers = bearer === undefined ? EMPTY : (await bearer({ ...request, body })).headers
  return { headers: { ...headers }, body: typeof body === "string" ? body : undefined }
}
