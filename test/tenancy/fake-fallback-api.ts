/**
 * A fake of the fallback snapshot API (docs/multi-tenant.md "The fallback
 * API") on loopback: mints read tokens for one service key and serves stored
 * snapshots by project and environment. It records every call (method, path,
 * bearer token) and can refuse tokens, hang, or go away.
 */
import { createServer } from "node:http"
import type { Server } from "node:http"

export interface FallbackCall {
  readonly method: string
  readonly path: string
  readonly bearer: string | undefined
}

export const startFallbackApi = async (serviceKey: string, options: { readonly expiresIn?: number } = {}) => {
  const calls: Array<FallbackCall> = []
  /** `projectId` → `envSlug` → stored text. */
  const snapshots = new Map<string, Map<string, string>>()
  const issued = new Set<string>()
  let minted = 0
  let mode: "serve" | "hang" | "refuse-tokens" = "serve"
  const server: Server = createServer((req, res) => {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]
    const path = req.url ?? ""
    calls.push({ method: req.method ?? "", path, bearer })
    req.resume()
    if (mode === "hang") return
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(body))
    }
    if (req.method === "POST" && path === "/v1/routing/mint-read-token") {
      if (bearer !== serviceKey) return json(401, { error: { code: "unauthorized" } })
      const token = `read-token-${++minted}`
      issued.add(token)
      return json(200, { token, expires_in: options.expiresIn ?? 300 })
    }
    const match = /^\/internal\/routing\/snapshots\/([^/]+)\/([^/]+)$/.exec(path)
    if (req.method === "GET" && match !== null) {
      if (bearer === undefined || !issued.has(bearer) || mode === "refuse-tokens") {
        if (mode === "refuse-tokens") mode = "serve"
        return json(401, { error: { code: "invalid_token" } })
      }
      const environments = snapshots.get(decodeURIComponent(match[1]))
      const stored = environments?.get(decodeURIComponent(match[2]))
      if (stored !== undefined) {
        res.writeHead(200, { "content-type": "application/json" })
        return res.end(stored)
      }
      return json(404, { error: { code: environments === undefined ? "ROUTING_NOT_CONFIGURED" : "ENVIRONMENT_NOT_FOUND" } })
    }
    json(404, { error: { code: "no_such_route" } })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (typeof address !== "object" || address === null) throw new Error("fake fallback API did not bind")
  return {
    url: `http://127.0.0.1:${address.port}`,
    calls,
    minted: () => minted,
    put: (projectId: string, envSlug: string, stored: string) => {
      const environments = snapshots.get(projectId) ?? new Map<string, string>()
      environments.set(envSlug, stored)
      snapshots.set(projectId, environments)
    },
    /** `refuse-tokens` answers 401 to the next snapshot request, as if the token were revoked. */
    setMode: (next: typeof mode) => void (mode = next),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
