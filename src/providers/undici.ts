/**
 * The parts of undici the gateway uses, imported from their own modules.
 *
 * Why not `import { Agent } from "undici"`: undici's index loads every feature
 * (fetch, WebSocket, caches, mocks, interceptors), and as CommonJS it cannot be
 * tree-shaken, so the production bundle would carry and evaluate all of it at
 * start. Measured (esbuild bundle of just the imports, Node 24, median of 3):
 * 1.27 MB against 0.69 MB of code and ~5 MiB more resident memory at start
 * (~13 MiB unbundled). These paths are not undici's public API, so package.json
 * pins undici to the exact version they were checked against (8.12.4); a new
 * version is taken by hand, after `npm run build` and the bundle smoke test.
 * Types come from the package's own declarations.
 *
 * `request` is undici's `Dispatcher#request`, called on a dispatcher rather
 * than mixed into undici's prototype (what the index does, and what this module
 * did before).
 */
import type { Agent as AgentType, Dispatcher, Pool as PoolType } from "undici"
import AgentImpl from "undici/lib/dispatcher/agent.js"
import PoolImpl from "undici/lib/dispatcher/pool.js"
import requestImpl from "undici/lib/api/api-request.js"

export const Agent = AgentImpl as unknown as typeof AgentType
export type Agent = AgentType
export const Pool = PoolImpl as unknown as typeof PoolType
export type Pool = PoolType

/** `dispatcher.request(options)` without undici's index. */
export const request = (dispatcher: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> =>
  (requestImpl as (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>).call(dispatcher, options)
