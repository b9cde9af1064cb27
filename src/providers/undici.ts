/**
 * The parts of undici the gateway uses, imported from their own modules:
 * undici's index loads every feature (fetch, WebSocket, caches, mocks), which
 * a production bundle would carry and evaluate at start for nothing. Types
 * come from the package's own declarations.
 *
 * `pool.request` is mixed into the dispatcher prototype as
 * undici's index does; the upstream transport itself only uses `dispatch`.
 */
import type { Agent as AgentType, Pool as PoolType } from "undici"
import AgentImpl from "undici/lib/dispatcher/agent.js"
import Dispatcher from "undici/lib/dispatcher/dispatcher.js"
import PoolImpl from "undici/lib/dispatcher/pool.js"
import request from "undici/lib/api/api-request.js"

Object.assign((Dispatcher as { prototype: object }).prototype, { request })

export const Agent = AgentImpl as unknown as typeof AgentType
export type Agent = AgentType
export const Pool = PoolImpl as unknown as typeof PoolType
export type Pool = PoolType
