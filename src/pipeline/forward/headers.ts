/**
 * Which headers cross the gateway, in each direction.
 *
 * Upstream: the gateway's own headers (`x-gw-*`, `x-genai-*`), hop-by-hop
 * headers (the standard ones, any the caller's `Connection` names, and
 * WebSocket handshake headers), the caller's credentials (replaced by the
 * provider's auth form) and `accept-encoding` (the gateway reads bodies
 * uncompressed) never leave. On the
 * fast path everything else passes, so SDK headers (`openai-beta`,
 * `anthropic-beta`, `x-stainless-*`) keep working; across families only the
 * essentials are sent.
 *
 * Downstream: the upstream's informational headers (rate limits, request ids,
 * processing time) pass; framing headers are the gateway's own, and the
 * upstream's hop-by-hop headers (the standard ones and any its `Connection`
 * names) stop at the gateway.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http"
import { Redacted } from "effect"
import { fingerprinted } from "../../config/index.ts"
import type { FingerprintedCredential } from "../../config/index.ts"
import type { PlanStep } from "../../routing/plan.ts"

const NEVER_UPSTREAM = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "expect",
  "authorization",
  "x-api-key",
  "api-key",
  "accept-encoding",
  "cookie",
  "x-request-id",
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-real-ip"
])

const isGatewayHeader = (name: string): boolean => name.startsWith("x-gw-") || name.startsWith("x-genai-")

/**
 * Headers a `Connection` header names as hop-by-hop (RFC 9110 §7.6.1): the
 * caller's are for the gateway, never for the upstream, and the upstream's
 * never for the caller. Usually none (`keep-alive` and `close` name no header).
 */
const namedHopByHop = (connection: string | ReadonlyArray<string> | undefined): ReadonlySet<string> | undefined => {
  if (connection === undefined) return undefined
  let named: Set<string> | undefined
  // undici hands an upstream's repeated `Connection` lines over as a list (Node's server joins a caller's).
  // What nearly every peer sends names nothing: no split, no lower-casing.
  if (connection === "keep-alive" || connection === "close" || connection === "Keep-Alive") return undefined
  for (const token of (typeof connection === "string" ? connection : connection.join(",")).split(",")) {
    const name = token.trim().toLowerCase()
    if (name === "" || name === "keep-alive" || name === "close") continue
    ;(named ??= new Set()).add(name)
  }
  return named
}

/** Caller headers forwarded on the fast path (same wire family). */
export const passThroughHeaders = (
  incoming: IncomingHttpHeaders,
  auth: Readonly<Record<string, string>>,
  requestId: string
): Record<string, string> => {
  const out: Record<string, string> = {}
  const hopByHop = namedHopByHop(incoming.connection)
  for (const name in incoming) {
    if (NEVER_UPSTREAM.has(name) || isGatewayHeader(name) || name.startsWith("sec-websocket-") || hopByHop?.has(name)) continue
    const value = incoming[name]
    if (value === undefined) continue
    out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  // The caller's `anthropic-version` wins over the gateway's default (fast path only).
  for (const name in auth) if (!(name === "anthropic-version" && out[name] !== undefined)) out[name] = auth[name]
  out["x-request-id"] = requestId
  return out
}

/** Headers of a translated request (different wire family). */
export const translatedHeaders = (
  auth: Readonly<Record<string, string>>,
  requestId: string,
  stream: boolean
): Record<string, string> => ({
  ...auth,
  "content-type": "application/json",
  accept: stream ? "text/event-stream" : "application/json",
  "x-request-id": requestId
})

const NEVER_DOWNSTREAM = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "set-cookie",
  "date",
  "server",
  "x-request-id",
  "alt-svc",
  "via",
  "strict-transport-security"
])

/**
 * How the caller gets the upstream's body: its bytes as they came
 * (`verbatim`), its event stream as it came but possibly ended by a frame of
 * the gateway's own (`events`), or a body the gateway wrote (`own`, translated).
 */
export type BodyForm = "verbatim" | "events" | "own"

/**
 * Upstream response headers to give the caller. `content-length` goes only
 * with the upstream's bytes exactly; `content-encoding` and `content-type`
 * only with the upstream's bytes.
 */
export const responseHeaders = (incoming: IncomingHttpHeaders, form: BodyForm): OutgoingHttpHeaders => {
  const out: OutgoingHttpHeaders = {}
  const hopByHop = namedHopByHop(incoming.connection)
  for (const name in incoming) {
    if (NEVER_DOWNSTREAM.has(name) || isGatewayHeader(name) || hopByHop?.has(name)) continue
    // Length and encoding describe the upstream's bytes: they go only with those bytes.
    if (name === "content-length" && form !== "verbatim") continue
    if ((name === "content-encoding" || name === "content-type") && form === "own") continue
    out[name] = incoming[name]
  }
  const upstreamId = incoming["x-request-id"]
  if (upstreamId !== undefined) out["x-upstream-request-id"] = upstreamId
  return out
}

const BEARER = /^bearer\s+(\S+)\s*$/i

/**
 * The caller's own provider key (bring-your-own-key): `Authorization: Bearer`,
 * `x-api-key` or `api-key`. Held as `Redacted` from the moment it is read.
 */
export const callerKey = (incoming: IncomingHttpHeaders): Redacted.Redacted<string> | undefined => {
  const authorization = incoming.authorization
  if (authorization !== undefined) {
    const key = bearerKey(authorization)
    if (key !== undefined) return key
  }
  const key = incoming["x-api-key"] ?? incoming["api-key"]
  const value = Array.isArray(key) ? key[0] : key
  if (value === undefined || value === "") return undefined
  // Apart from the `Authorization` values (a key alone never matches one of those).
  const header = `\0${value}`
  return recentKeys.get(header) ?? remember(header, value)
}

/** The key of a `Bearer …` header value (the one `Redacted` of a recent value); undefined when the value is not one. */
export const bearerKey = (value: string): Redacted.Redacted<string> | undefined => {
  const known = recentKeys.get(value)
  if (known !== undefined) return known
  const match = BEARER.exec(value)
  return match === null ? undefined : remember(value, match[1])
}

/**
 * The caller keys of recent requests, by the header value they came in, each
 * held as one `Redacted`: a caller sends the same key with every request, and
 * `Redacted.make` (it registers every value in a process-wide `WeakMap`) cost
 * about 1 % of a request's CPU at full load when made anew per request. Only
 * this process's memory holds them, as it holds every request in flight;
 * bounded, the oldest forgotten first.
 */
const recentKeys = new Map<string, Redacted.Redacted<string>>()
const RECENT_KEYS = 256

const remember = (header: string, value: string): Redacted.Redacted<string> => {
  if (recentKeys.size >= RECENT_KEYS) recentKeys.delete(recentKeys.keys().next().value!)
  const key = Redacted.make(value)
  recentKeys.set(header, key)
  return key
}

/**
 * The credential a request runs with, for what is kept per credential (the
 * response cache): the caller's own key, else the configured credential of
 * the plan's first target.
 */
export const requestCredential = (
  key: Redacted.Redacted<string> | undefined,
  steps: ReadonlyArray<PlanStep>
): FingerprintedCredential => {
  // Fingerprinted once per key object (a recent caller's key is one object: see `recentKeys`).
  if (key !== undefined) return fingerprinted(key)
  return steps[0]?.targets[0]?.provider.credential ?? NO_KEY
}

const NO_KEY = fingerprinted(undefined)

/**
 * Which attempts may carry the caller's own key: only those to the origin the
 * request's first attempt went to. A route that fails over to another
 * provider uses that provider's configured credential there, so a caller's
 * OpenAI key is never handed to Anthropic (or to any other host). One tracker
 * per request.
 */
export const callerKeyPolicy = (key: Redacted.Redacted<string> | undefined) => {
  let anchor: string | undefined
  return (origin: string): Redacted.Redacted<string> | undefined => {
    if (key === undefined) return undefined
    anchor ??= origin
    return anchor === origin ? key : undefined
  }
}
