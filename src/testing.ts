/**
 * Test your own routing configuration: the gateway's resolution, plans,
 * retries, failover and timeouts, run against a scripted provider layer on
 * virtual time. No sockets, no real waiting. See docs/testing-your-routing.md.
 */
import { parse } from "smol-toml"
import { settingsFromDocument } from "./config/index.ts"
import { compileProvider } from "./providers/adapter.ts"
import { compileRoutingTable } from "./routing/table.ts"
import type { RoutingTable } from "./routing/table.ts"

export { layerTest as scriptedProviders, TestReply } from "./providers/testing.ts"
export type { UpstreamCall } from "./providers/transport.ts"
export { simulateRequest } from "./pipeline/simulate.ts"
export type { SimulatedAttempt, SimulatedRequest, SimulationResult } from "./pipeline/simulate.ts"

/** Validates a TOML configuration exactly like the gateway at startup and compiles its routing. */
export const routingFromToml = (toml: string, env: Readonly<Record<string, string | undefined>> = {}): RoutingTable => {
  const result = settingsFromDocument(parse(toml), env, "<test>")
  if (!result.ok) throw result.error
  return compileRoutingTable(result.settings, compileProvider)
}
