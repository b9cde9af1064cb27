/**
 * `GET /metrics`: the Prometheus text of the `Metrics` stage, outside `/v1`,
 * on the gateway's own address or (`[metrics] port`) on a listener of its
 * own that serves nothing else.
 *
 * Details
 * - The listener of its own answers 404 to any other path and 405 to any
 *   other method; it is closed with the gateway.
 * - A scrape reads the gauges (open streams, dependencies) at that moment.
 */
import { Effect } from "effect"
import type * as Http from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { bodyReply } from "../pipeline/index.ts"
import type { JsonLog, MetricsShape } from "../pipeline/index.ts"
import type { RouteDef } from "./router.ts"
import { StartError } from "./server.ts"

/** `node:http` by `require`, for the reason server.ts gives. */
const { createServer } = createRequire(import.meta.url)("node:http") as typeof Http

export const metricsRoutes = (metrics: MetricsShape): ReadonlyArray<RouteDef<never>> => [
  {
    method: "GET",
    path: "/metrics",
    handler: (ctx) => Effect.map(metrics.scrape, ({ body, contentType }) => bodyReply(ctx, 200, body, contentType))
  }
]

/** Answers one request of the metrics listener. */
const answer = (metrics: MetricsShape, req: Http.IncomingMessage, res: Http.ServerResponse): void => {
  const path = (req.url ?? "/").split("?")[0]
  if (path !== "/metrics") {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found: this listener serves /metrics only\n")
    return
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { "content-type": "text/plain", allow: "GET" }).end("method not allowed\n")
    return
  }
  Effect.runFork(Effect.map(metrics.scrape, ({ body, contentType }) => res.writeHead(200, { "content-type": contentType }).end(body)))
}

/** Serves `/metrics` on `host:port` until the enclosing scope closes; resolves with the bound port. */
export const listenMetrics = (host: string, port: number, metrics: MetricsShape, log: JsonLog) =>
  Effect.acquireRelease(
    Effect.callback<Http.Server, StartError>((resume) => {
      const server = createServer((req, res) => answer(metrics, req, res))
      server.once("error", (error) => resume(Effect.fail(new StartError({ message: `cannot listen on ${host}:${port} for metrics: ${error.message}` }))))
      server.listen(port, host, () => {
        const address = server.address() as AddressInfo
        log.log("info", "metrics listening", { host: address.address, port: address.port })
        resume(Effect.succeed(server))
      })
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
