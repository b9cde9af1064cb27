/**
 * The fallback snapshot API (docs/reference/gateway-spec.md §5), asked for a cold tenant when Redis
 * cannot answer. The contract (docs/multi-tenant.md "The fallback API"):
 *
 * 1. `POST {api_fallback_url}/v1/routing/mint-read-token` with
 *    `Authorization: Bearer <api_fallback_auth_token>` and body `{}` answers
 *    200 `{"token": "...", "expires_in": <seconds>}`. The token is cached
 *    until `expires_in` minus a skew; concurrent loads share one mint.
 * 2. `GET {api_fallback_url}/internal/routing/snapshots/{projectId}/{envSlug}`
 *    with `Authorization: Bearer <token>` answers 200 with the stored value
 *    exactly as Redis holds it (envelope or plaintext JSON), or 404 with
 *    `{"error": {"code": "ROUTING_NOT_CONFIGURED" | "ENVIRONMENT_NOT_FOUND"}}`.
 *    A 401/403 drops the cached token and mints once more.
 *
 * Anything else (another status, a 404 without one of those codes, a
 * network error, the whole exchange exceeding `api_fallback_timeout_ms`) is
 * "unavailable". Neither token ever reaches a log or an error message.
 */
import { Effect, Redacted } from "effect"
import { request } from "undici"
import type { Dispatcher } from "undici"
import type { SnapshotLookup, SnapshotSource } from "./contracts.ts"
import { SourceUnavailable } from "./contracts.ts"
import { MAX_SNAPSHOT_BYTES } from "./open-snapshot.ts"
import type { TenantId } from "./selection.ts"

/** A read token is renewed this long before it expires (at most half its lifetime). */
const TOKEN_SKEW_SECONDS = 30
const MINT_BODY_LIMIT = 64 * 1024

export interface FallbackApiOptions {
  /** `api_fallback_url`, without a trailing slash. */
  readonly baseUrl: string
  /** `api_fallback_auth_token`: a service key with `routing:publish` (without one the mint is unauthenticated). */
  readonly authToken: Redacted.Redacted<string> | undefined
  /** Bound on the whole exchange (mint and fetch). */
  readonly timeoutMs: number
}

class Unavailable extends Error {}

const readLimited = async (body: Dispatcher.ResponseData["body"], limit: number): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body) {
    size += (chunk as Buffer).byteLength
    if (size > limit) {
      body.destroy()
      throw new Unavailable(`response larger than ${limit} bytes`)
    }
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString("utf8")
}

const codeOf = (text: string): string | undefined => {
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code
    return typeof code === "string" ? code : undefined
  } catch {
    return undefined
  }
}

export const makeFallbackSource = (options: FallbackApiOptions): SnapshotSource => {
  const base = options.baseUrl.replace(/\/+$/, "")
  let cached: { readonly token: Redacted.Redacted<string>; readonly renewAt: number } | undefined
  let minting: Promise<Redacted.Redacted<string>> | undefined

  const mint = async (): Promise<Redacted.Redacted<string>> => {
    // Its own deadline: a mint is shared, so no one caller's cancellation may abort it.
    const signal = AbortSignal.timeout(options.timeoutMs)
    const response = await request(`${base}/v1/routing/mint-read-token`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.authToken === undefined ? {} : { authorization: `Bearer ${Redacted.value(options.authToken)}` })
      },
      body: "{}",
      signal
    })
    const text = await readLimited(response.body, MINT_BODY_LIMIT)
    if (response.statusCode !== 200) {
      throw new Unavailable(`mint-read-token answered ${response.statusCode}${response.statusCode === 401 || response.statusCode === 403 ? " (api_fallback_auth_token refused)" : ""}`)
    }
    let parsed: { token?: unknown; expires_in?: unknown }
    try {
      parsed = JSON.parse(text) as typeof parsed
    } catch {
      throw new Unavailable("mint-read-token answered a body that is not JSON")
    }
    const { token, expires_in } = parsed
    if (typeof token !== "string" || token === "" || typeof expires_in !== "number" || !(expires_in > 0)) {
      throw new Unavailable("mint-read-token answered without a token and a positive expires_in")
    }
    const lifetime = expires_in - Math.min(TOKEN_SKEW_SECONDS, expires_in / 2)
    const redacted = Redacted.make(token)
    cached = { token: redacted, renewAt: Date.now() + lifetime * 1000 }
    return redacted
  }

  const readToken = (): Promise<Redacted.Redacted<string>> => {
    if (cached !== undefined && Date.now() < cached.renewAt) return Promise.resolve(cached.token)
    // One mint at a time; the callers that join it share its outcome.
    minting ??= mint().finally(() => (minting = undefined))
    return minting
  }

  const fetchSnapshot = async (tenant: TenantId, token: Redacted.Redacted<string>, signal: AbortSignal) => {
    const path = `/internal/routing/snapshots/${encodeURIComponent(tenant.projectId)}/${encodeURIComponent(tenant.envSlug)}`
    const response = await request(`${base}${path}`, {
      method: "GET",
      headers: { authorization: `Bearer ${Redacted.value(token)}` },
      signal
    })
    return { status: response.statusCode, text: await readLimited(response.body, MAX_SNAPSHOT_BYTES) }
  }

  const lookup = async (tenant: TenantId, signal: AbortSignal): Promise<SnapshotLookup> => {
    let answer = await fetchSnapshot(tenant, await readToken(), signal)
    if (answer.status === 401 || answer.status === 403) {
      cached = undefined
      answer = await fetchSnapshot(tenant, await readToken(), signal)
    }
    if (answer.status === 200) return { _tag: "Found", raw: answer.text }
    if (answer.status === 404) {
      const code = codeOf(answer.text)
      if (code === "ROUTING_NOT_CONFIGURED" || code === "ENVIRONMENT_NOT_FOUND") return { _tag: "Missing", code }
      throw new Unavailable("snapshot endpoint answered 404 without ROUTING_NOT_CONFIGURED or ENVIRONMENT_NOT_FOUND")
    }
    throw new Unavailable(`snapshot endpoint answered ${answer.status}`)
  }

  return {
    lookup: (tenant) =>
      Effect.tryPromise({
        try: (signal) => lookup(tenant, signal),
        catch: (error) =>
          new SourceUnavailable({
            source: "fallback api",
            message: error instanceof Unavailable ? error.message : `request failed: ${(error as Error).message ?? String(error)}`
          })
      }).pipe(
        Effect.timeoutOrElse({
          duration: options.timeoutMs,
          orElse: () => Effect.fail(new SourceUnavailable({ source: "fallback api", message: `no answer within ${options.timeoutMs} ms` }))
        })
      )
  }
}
