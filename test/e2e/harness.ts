/**
 * Runs the real gateway (live layers, real HTTP) on an ephemeral loopback port
 * with a configuration document built by the test, and captures its log lines.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { GatewayConfig } from "../../src/config/index.ts"
import { boundPort } from "../../src/http/index.ts"
import { liveLayer, serveGateway } from "../../src/gateway.ts"
import { Log } from "../../src/pipeline/telemetry/log.ts"

export interface RunningGateway {
  readonly url: string
  readonly port: number
  readonly logs: Array<Record<string, unknown>>
  /** The request log lines (msg = "request"), in order. */
  readonly requestLogs: () => Array<Record<string, unknown>>
  readonly close: () => Promise<void>
}

export const startGateway = async (
  document: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>> = {}
): Promise<RunningGateway> => {
  const settings = GatewayConfig.fromDocument(
    { ...document, server: { host: "127.0.0.1", port: 0, ...(document.server as object | undefined) } },
    env
  )
  const logs: Array<Record<string, unknown>> = []
  const layer = liveLayer(settings, Log.capturing(logs))
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const server = await Effect.runPromise(serveGateway.pipe(Effect.provideContext(context), Scope.provide(scope)))
  const port = boundPort(server)
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    logs,
    requestLogs: () => logs.filter((line) => line.msg === "request"),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** Waits until the gateway logged `count` request lines (they are written when a response closes). */
export const waitForRequestLogs = async (gateway: RunningGateway, count: number, timeoutMs = 3000) => {
  const deadline = Date.now() + timeoutMs
  while (gateway.requestLogs().length < count) {
    if (Date.now() > deadline) throw new Error(`expected ${count} request log lines, got ${gateway.requestLogs().length}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return gateway.requestLogs()
}
