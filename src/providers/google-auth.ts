/**
 * Google OAuth access tokens for Vertex AI (`credentials_file` in a vertex
 * provider): each request gets `authorization: Bearer <token>` from a token
 * fetched once and cached until shortly before it expires (a minute, or half
 * its lifetime when that is shorter); concurrent requests share one refresh.
 *
 * A service-account key file is exchanged here, with node:crypto, by the
 * JWT-bearer grant (RFC 7523) at the key's own `token_uri`:
 * google-auth-library (gtoken) posts to a fixed https://oauth2.googleapis.com/token
 * whatever the key file says, so a private or emulated token endpoint could
 * not be used through it. Any other credentials (`authorized_user` files,
 * the gcloud default file, the metadata server of a Google Cloud machine) go
 * through google-auth-library's application default credentials, loaded with
 * the first request (its clients cache and refresh tokens themselves). The
 * private key and the tokens stay out of every log and error message.
 */
import { createSign } from "node:crypto"
import { readFile } from "node:fs/promises"
import type { GoogleCredentials } from "../config/index.ts"
import type { SignRequest } from "./sigv4.ts"

const SCOPE = "https://www.googleapis.com/auth/cloud-platform"
const DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
const ASSERTION_LIFETIME_SECS = 3600
const REFRESH_MARGIN_MS = 60_000

interface AccessToken {
  readonly token: string
  /** Epoch ms after which a new one is fetched. */
  readonly refreshAt: number
}

interface ServiceAccountKey {
  readonly client_email: string
  readonly private_key: string
  readonly private_key_id?: string | undefined
  readonly token_uri?: string | undefined
}

const base64url = (value: string | Buffer): string => Buffer.from(value).toString("base64url")

const isServiceAccount = (json: unknown): json is ServiceAccountKey & { readonly type: "service_account" } =>
  typeof json === "object" && json !== null && (json as Record<string, unknown>).type === "service_account" &&
  typeof (json as Record<string, unknown>).client_email === "string" && typeof (json as Record<string, unknown>).private_key === "string"

/** The signed assertion a service account trades for a token (RS256, audience its token endpoint). */
export const serviceAccountAssertion = (key: ServiceAccountKey, tokenUri: string, nowMs: number): string => {
  const iat = Math.floor(nowMs / 1000)
  const header = base64url(JSON.stringify({ alg: "RS256", typ: "JWT", ...(key.private_key_id === undefined ? {} : { kid: key.private_key_id }) }))
  const claims = base64url(JSON.stringify({ iss: key.client_email, scope: SCOPE, aud: tokenUri, iat, exp: iat + ASSERTION_LIFETIME_SECS }))
  const signature = createSign("RSA-SHA256").update(`${header}.${claims}`).sign(key.private_key)
  return `${header}.${claims}.${base64url(signature)}`
}

/** When a token valid for `expiresInSecs` from `nowMs` is replaced. */
const refreshAtOf = (nowMs: number, expiresInSecs: number): number => {
  const lifetimeMs = Math.max(0, expiresInSecs) * 1000
  return nowMs + lifetimeMs - Math.min(REFRESH_MARGIN_MS, lifetimeMs / 2)
}

/** One token from the key's endpoint; the error says the status, never the body (it may echo the assertion). */
const exchange = async (key: ServiceAccountKey): Promise<AccessToken> => {
  const tokenUri = key.token_uri ?? DEFAULT_TOKEN_URI
  const now = Date.now()
  const response = await fetch(tokenUri, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: serviceAccountAssertion(key, tokenUri, now) })
  })
  if (!response.ok) throw new Error(`the token endpoint answered ${response.status}`)
  const json = (await response.json()) as { access_token?: unknown; expires_in?: unknown }
  if (typeof json.access_token !== "string") throw new Error("the token endpoint answered without an access_token")
  return { token: json.access_token, refreshAt: refreshAtOf(now, typeof json.expires_in === "number" ? json.expires_in : ASSERTION_LIFETIME_SECS) }
}

/** google-auth-library's application default credentials (or a key file of another type), loaded on first use. */
const libraryTokens = (keyFile: string | undefined, projectId: string | undefined): (() => Promise<AccessToken>) => {
  let auth: Promise<{ getAccessToken(): Promise<string | null | undefined> }> | undefined
  return async () => {
    auth ??= import("google-auth-library").then(({ GoogleAuth }) => new GoogleAuth({
      scopes: [SCOPE],
      // The provider's project: the library need not look one up (metadata server, gcloud) before a token.
      ...(projectId === undefined ? {} : { projectId }),
      ...(keyFile === undefined ? {} : { keyFile })
    }))
    const token = await auth.then((client) => client.getAccessToken())
    if (typeof token !== "string" || token === "") throw new Error("application default credentials gave no access token")
    // The library caches and refreshes on its own: asked each time, it answers from its cache.
    return { token, refreshAt: 0 }
  }
}

/** Tokens of a key file: a service account's exchanged here at its `token_uri`, any other through the library. */
const keyFileTokens = (path: string, projectId: string | undefined): (() => Promise<AccessToken>) => {
  let source: Promise<() => Promise<AccessToken>> | undefined
  return async () => {
    source ??= readFile(path, "utf8").then((text) => {
      const json: unknown = JSON.parse(text)
      if (!isServiceAccount(json)) return libraryTokens(path, projectId)
      const key: ServiceAccountKey = json
      return () => exchange(key)
    }).catch((error: unknown) => {
      source = undefined // read again with the next request (the file may be mounted late)
      throw error
    })
    return (await source)()
  }
}

/** A cache over `fetchToken`: one fetch at a time, reused until its `refreshAt`. */
const cached = (fetchToken: () => Promise<AccessToken>): (() => Promise<string>) => {
  let current: AccessToken | undefined
  let pending: Promise<AccessToken> | undefined
  return async () => {
    if (current !== undefined && Date.now() < current.refreshAt) return current.token
    pending ??= fetchToken().then(
      (token) => {
        current = token
        pending = undefined
        return token
      },
      (error: unknown) => {
        pending = undefined
        throw error
      }
    )
    return (await pending).token
  }
}

/** The request hook of a Vertex provider with Google credentials: adds the bearer (the transport calls it before sending). */
export const googleBearer = (credentials: GoogleCredentials, projectId?: string): SignRequest => {
  const token = cached(credentials.kind === "key_file" ? keyFileTokens(credentials.path, projectId) : libraryTokens(undefined, projectId))
  return async () => ({ headers: { authorization: `Bearer ${await token()}` } })
}
