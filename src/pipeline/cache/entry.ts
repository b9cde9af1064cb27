/**
 * What a cache entry holds: for chat, the canonical answer (so a hit can be
 * replayed as a stream or a JSON body in the caller's format) and, when the
 * original answer was not streamed, the exact bytes the caller got; for
 * embeddings, the body. Plus when it was stored (for `x-gw-cache-age`) and the
 * provider that answered.
 */
import type { ChatResponse } from "../../domain/index.ts"

export interface CachedChat {
  readonly kind: "chat"
  readonly response: ChatResponse
  /** The non-streamed answer exactly as the caller got it, when there was one. */
  readonly body?: { readonly status: number; readonly contentType: string; readonly bytes: Uint8Array } | undefined
}

export interface CachedBody {
  readonly kind: "body"
  readonly status: number
  readonly contentType: string
  readonly bytes: Uint8Array
}

export type CacheEntry = (CachedChat | CachedBody) & {
  /** Unix milliseconds when the answer was stored. */
  readonly storedAt: number
  /** The provider that answered (`x-gw-upstream-provider` on a hit). */
  readonly provider: string
}

interface WireEntry {
  readonly v: 1
  readonly kind: "chat" | "body"
  readonly storedAt: number
  readonly provider: string
  readonly response?: ChatResponse
  readonly status?: number
  readonly contentType?: string
  readonly bytes?: string
}

export const encodeEntry = (entry: CacheEntry): Buffer => {
  const body = entry.kind === "chat" ? entry.body : entry
  const wire: WireEntry = {
    v: 1,
    kind: entry.kind,
    storedAt: entry.storedAt,
    provider: entry.provider,
    ...(entry.kind === "chat" ? { response: entry.response } : {}),
    ...(body === undefined ? {} : { status: body.status, contentType: body.contentType, bytes: Buffer.from(body.bytes).toString("base64") })
  }
  return Buffer.from(JSON.stringify(wire))
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** The entry of a stored plaintext, or undefined when it is not one (an old version, garbage). */
export const decodeEntry = (plaintext: Uint8Array): CacheEntry | undefined => {
  let wire: unknown
  try {
    wire = JSON.parse(Buffer.from(plaintext).toString("utf8"))
  } catch {
    return undefined
  }
  if (!isRecord(wire) || wire.v !== 1 || typeof wire.storedAt !== "number" || typeof wire.provider !== "string") return undefined
  const body = typeof wire.bytes === "string" && typeof wire.status === "number" && typeof wire.contentType === "string"
    ? { status: wire.status, contentType: wire.contentType, bytes: Buffer.from(wire.bytes, "base64") }
    : undefined
  if (wire.kind === "chat" && isRecord(wire.response) && Array.isArray(wire.response.content)) {
    return { kind: "chat", response: wire.response as unknown as ChatResponse, body, storedAt: wire.storedAt, provider: wire.provider }
  }
  if (wire.kind === "body" && body !== undefined) return { kind: "body", ...body, storedAt: wire.storedAt, provider: wire.provider }
  return undefined
}
