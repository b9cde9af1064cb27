/**
 * A reference for `npm run bench`: the least a Node proxy can do. A bare
 * `node:http` server that reads the request, sends it to the upstream through
 * an undici pool and streams the answer back, with no routing, no
 * translation, no logging. What the gateway costs beyond this is its own work;
 * what this costs is Node's (and the machine's) floor.
 *
 *   node bench/node-hop.ts UPSTREAM_ORIGIN   → prints {"port":N} when listening
 */
import { createServer } from "node:http"
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http"
import { Pool } from "undici"

const upstream = new Pool(process.argv[2], { connections: 1024 })
const HOP_BY_HOP = ["connection", "keep-alive", "transfer-encoding"]
/** The request's body is sent again by undici, which frames it itself. */
const NOT_FORWARDED_UP = new Set([...HOP_BY_HOP, "host", "content-length"])
/**
 * The answer's bytes are copied as they come, so its length still holds: a
 * JSON answer keeps its content-length (as the gateway's does) instead of
 * being re-framed in chunks, which would cost the hop and the load generator
 * work the gateway does not cause.
 */
const NOT_FORWARDED_DOWN = new Set(HOP_BY_HOP)

const forwardable = (headers: IncomingHttpHeaders | Record<string, string | Array<string> | undefined>, dropped: ReadonlySet<string>): OutgoingHttpHeaders => {
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) if (!dropped.has(name) && value !== undefined) out[name] = value
  return out
}

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    upstream.dispatch({ method: req.method as "POST", path: req.url ?? "/", headers: forwardable(req.headers, NOT_FORWARDED_UP) as Record<string, string>, body: Buffer.concat(chunks) }, {
      onRequestStart() {},
      onResponseStart(_controller: unknown, status: number, headers: Record<string, string | Array<string> | undefined>) {
        res.writeHead(status, forwardable(headers, NOT_FORWARDED_DOWN))
      },
      onResponseData(_controller: unknown, chunk: Buffer) {
        res.write(chunk)
      },
      onResponseEnd() {
        res.end()
      },
      onResponseError(_controller: unknown, error: Error) {
        res.destroy(error)
      }
    })
  })
})
server.keepAliveTimeout = 600_000
server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address !== null ? address.port : 0 })}\n`)
})
process.on("SIGTERM", () => process.exit(0))
