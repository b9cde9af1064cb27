/**
 * Runs the real gateway (live layers, real HTTP) on an ephemeral loopback port
 * with a configuration document built by the test, and captures its log lines;
 * `gatewayWithFakes` sets up an e2e file's fake upstreams and gateway as its hooks.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { GatewayConfig } from "../../src/config/index.ts"
import { boundPort } from "../../src/http/index.ts"
import { liveLayer, serveGateway } from "../../src/gateway.ts"
import { Log } from "../../src/infra/log.ts"
import { startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream, FakeUpstreamOptions } from "../fixtures/fake-upstream.ts"

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

export interface GatewayWithFakes<K extends string> {
  /** The fake upstreams by name: filled in before the file's first test. */
  readonly fakes: Readonly<Record<K, FakeUpstream>>
  /** The gateway configured against them: usable from the file's first test on. */
  readonly gateway: RunningGateway
}

/**
 * The usual setup of an e2e file, registered as that file's hooks: before all
 * tests the fakes of `kinds` start, then a gateway with the document
 * `configure` builds from them (it may await more, such as a port nothing
 * listens on); before each test every fake is reset (scripts, recorded
 * requests, files); after all tests the gateway closes, then the fakes.
 *
 * Call it at the top level of the file (or of a `describe`, for its tests
 * alone). A `beforeAll` registered after it runs once the gateway is up (SDK
 * clients of `gateway.url`); hooks registered before it run first and their
 * `afterAll` once everything is closed (vitest runs after-hooks in reverse
 * order).
 */
export const gatewayWithFakes = <K extends string>(
  kinds: Readonly<Record<K, FakeUpstreamOptions>>,
  configure: (fakes: Readonly<Record<K, FakeUpstream>>) => Record<string, unknown> | Promise<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>> = {}
): GatewayWithFakes<K> => {
  const fakes = {} as Record<K, FakeUpstream>
  let running: RunningGateway | undefined
  const started = () => {
    if (running === undefined) throw new Error("the gateway starts in beforeAll: use it inside a hook or a test")
    return running
  }
  const gateway: RunningGateway = {
    get url() {
      return started().url
    },
    get port() {
      return started().port
    },
    get logs() {
      return started().logs
    },
    requestLogs: () => started().requestLogs(),
    close: () => started().close()
  }
  const names = Object.keys(kinds) as Array<K>
  beforeAll(async () => {
    const each = await Promise.all(names.map((name) => startFakeUpstream(kinds[name])))
    names.forEach((name, i) => (fakes[name] = each[i]))
    running = await startGateway(await configure(fakes), env)
  })
  afterAll(async () => {
    await running?.close()
    await Promise.all(names.map((name) => fakes[name]?.close()))
  })
  beforeEach(() => {
    for (const name of names) fakes[name].reset()
  })
  return { fakes, gateway }
}
