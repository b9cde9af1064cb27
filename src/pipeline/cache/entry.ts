/**
 * What a cache entry holds: for chat, the canonical answer (so a hit can be
 * replayed as a stream or a JSON body in the caller's format) and, when the
 * original answer was not streamed, the exact bytes the caller got; for
 * embeddings, the body. Plus when it was stored (for `x-gw-cache-age`) and the
 * provider that answered.
 *
 * The stored form is binary, so a hit reads only what it serves: a version
 * byte, a small JSON header, the caller's bytes as they are (no base64), then
 * the canonical answer as JSON, parsed only when the hit needs it (a stream
 * replay, another format's body).
 *
 *   [2] [u32 header length] [header JSON] [u32 body length | NO_BODY] [body bytes] [answer JSON]
 */
import type { ChatResponse } from "../../domain/index.ts"

export interface CachedChat {
  readonly kind: "chat"
  /** The canonical answer; on a looked-up entry it is parsed on first call, undefined when it does not parse. */
  readonly response: () => ChatResponse | undefined
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

const VERSION = 2
const NO_BODY = 0xffffffff

interface Header {
  readonly kind: "chat" | "body"
  readonly storedAt: number
  readonly provider: string
  readonly status?: number
  readonly contentType?: string
}

export const encodeEntry = (entry: CacheEntry): Buffer => {
  const body = entry.kind === "chat" ? entry.body : entry
  const header: Header = {
    kind: entry.kind,
    storedAt: entry.storedAt,
    provider: entry.provider,
    ...(body === undefined ? {} : { status: body.status, contentType: body.contentType })
  }
  const headerBytes = Buffer.from(JSON.stringify(header))
  const answer = entry.kind === "chat" ? Buffer.from(JSON.stringify(entry.response() ?? null)) : Buffer.alloc(0)
  const bodyLength = body === undefined ? 0 : body.bytes.byteLength
  const out = Buffer.allocUnsafe(1 + 4 + headerBytes.length + 4 + bodyLength + answer.length)
  let at = out.writeUInt8(VERSION, 0)
  at = out.writeUInt32BE(headerBytes.length, at)
  at += headerBytes.copy(out, at)
  at = out.writeUInt32BE(body === undefined ? NO_BODY : bodyLength, at)
  if (body !== undefined) at += Buffer.from(body.bytes.buffer, body.bytes.byteOffset, bodyLength).copy(out, at)
  answer.copy(out, at)
  return out
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** Parses the stored answer once, on first use. */
const lazyAnswer = (bytes: Buffer): (() => ChatResponse | undefined) => {
  let parsed: ChatResponse | undefined | null = null
  return () => {
    if (parsed === null) {
      try {
        const value: unknown = JSON.parse(bytes.toString("utf8"))
        parsed = isRecord(value) && Array.isArray(value.content) ? value as unknown as ChatResponse : undefined
      } catch {
        parsed = undefined
      }
    }
    return parsed
  }
}

/** The entry of a stored plaintext, or undefined when it is not one (another version, truncated, garbage). */
export const decodeEntry = (plaintext: Uint8Array): CacheEntry | undefined => {
  const bytes = Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength)
  if (bytes.length < 9 || bytes[0] !== VERSION) return undefined
  const headerEnd = 5 + bytes.readUInt32BE(1)
  if (headerEnd + 4 > bytes.length) return undefined
  let header: unknown
  try {
    header = JSON.parse(bytes.toString("utf8", 5, headerEnd))
  } catch {
    return undefined
  }
  if (!isRecord(header) || typeof header.storedAt !== "number" || typeof header.provider !== "string") return undefined
  const bodyLength = bytes.readUInt32BE(headerEnd)
  const bodyStart = headerEnd + 4
  const bodyEnd = bodyLength === NO_BODY ? bodyStart : bodyStart + bodyLength
  if (bodyEnd > bytes.length) return undefined
  const body = bodyLength !== NO_BODY && typeof header.status === "number" && typeof header.contentType === "string"
    ? { status: header.status, contentType: header.contentType, bytes: bytes.subarray(bodyStart, bodyEnd) }
    : undefined
  const { storedAt, provider } = header
  if (header.kind === "chat") return { kind: "chat", response: lazyAnswer(bytes.subarray(bodyEnd)), body, storedAt, provider }
  if (header.kind === "body" && body !== undefined) return { kind: "body", ...body, storedAt, provider }
  return undefined
}
