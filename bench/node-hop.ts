/**
 * A reference for `npm run bench`: the least a Node proxy can do. A bare
 * `node:http` server that reads the request, sends it to the upstream through
 * an undici pool and streams the answer back, with no routing, no
 * translation, no logging. What the gateway costs beyond this is its own work;
 * what this costs is Node's (and the machine's) floor.
 *
 *   node bench/node-hop.ts UPSTREAM_ORIGIN [--floor]   → prints {"port":N} when listening
 *
 * `--floor`: the hop plus the least the specification asks of any gateway on
 * this request, and nothing else: the request's body parsed (its model routes
 * it), a request id (`x-request-id`), the answer read for its usage (a JSON
 * answer parsed; a stream's events split and its usage event parsed) and one
 * JSON log line per request, written once per turn of the event loop. What
 * the floor costs over the hop is no gateway's to save (issue 29's notes).
 */
import { randomUUID } from "node:crypto"
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

const floor = process.argv.includes("--floor")

/** The floor's log: lines of one turn in one write. */
let pending: Array<string> = []
const flush = () => {
  process.stdout.write(`${pending.join("\n")}\n`)
  pending = []
}
/** The ISO time, made once per millisecond (as the gateway's log does). */
let isoAt = 0
let iso = ""
const logLine = (fields: Record<string, unknown>) => {
  if (pending.length === 0) setImmediate(flush)
  const now = Date.now()
  if (now !== isoAt) {
    isoAt = now
    iso = new Date(now).toISOString()
  }
  pending.push(`{"time":"${iso}","level":"info","msg":"request",${JSON.stringify(fields).slice(1)}`)
}

/** The usage of an answer: a JSON body parsed; a stream's events split, the one with usage parsed. */
const usageOf = (stream: boolean, body: string): unknown => {
  if (!stream) return (JSON.parse(body) as { usage?: unknown }).usage
  let usage: unknown
  for (const event of body.split("\n\n")) {
    if (event.startsWith("data: {") && event.includes("\"usage\":{")) usage = (JSON.parse(event.slice(6)) as { usage?: unknown }).usage
  }
  return usage
}

const server = createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const body = Buffer.concat(chunks)
    const request = floor ? (JSON.parse(body.toString("utf8")) as { model?: string; stream?: boolean }) : undefined
    const requestId = floor ? randomUUID() : undefined
    const answer: Array<Buffer> = []
    const started = performance.now()
    upstream.dispatch({ method: req.method as "POST", path: req.url ?? "/", headers: forwardable(req.headers, NOT_FORWARDED_UP) as Record<string, string>, body }, {
      onRequestStart() {},
      onResponseStart(_controller: unknown, status: number, headers: Record<string, string | Array<string> | undefined>) {
        const out = forwardable(headers, NOT_FORWARDED_DOWN)
        if (requestId !== undefined) out["x-request-id"] = requestId
        res.writeHead(status, out)
      },
      onResponseData(_controller: unknown, chunk: Buffer) {
        if (floor) answer.push(chunk)
        res.write(chunk)
      },
      onResponseEnd() {
        res.end()
        if (request === undefined) return
        const usage = usageOf(request.stream === true, Buffer.concat(answer).toString("utf8")) as { prompt_tokens?: number; completion_tokens?: number } | undefined
        logLine({
          model: request.model,
          stream: request.stream === true,
          input_tokens: usage?.prompt_tokens,
          output_tokens: usage?.completion_tokens,
          request_id: requestId,
          method: req.method,
          path: req.url,
          status: res.statusCode,
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000
        })
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
