/**
 * OTLP over gRPC: the collector's `TraceService/Export` and
 * `MetricsService/Export` unary calls, with requests already encoded
 * (protobuf bytes in, the response's partial-success report out), written
 * straight on a `node:http2` session.
 *
 * Details
 * - A unary gRPC call is one HTTP/2 POST: the headers (`content-type:
 *   application/grpc`, `te: trailers`, `grpc-timeout`, the metadata), one
 *   length-prefixed message, and an answer whose `grpc-status` comes in the
 *   trailers (or in the headers of a trailers-only answer). That is all the
 *   exporter needs; grpc-js (name resolution, load balancing, channel state
 *   machines, interceptors, a status `Error` with its stack for every call)
 *   cost about twice the CPU per export call (bench/README.md, "Telemetry").
 * - One session per collector address, shared by every credential: the
 *   credential travels as the call's `authorization` metadata. A session that
 *   fails, closes or is told to go away is forgotten; the next call opens a
 *   new one. The session holds the process open only while a call is in
 *   flight.
 * - `http://` is plaintext (HTTP/2 with prior knowledge), `https://` is TLS
 *   (ALPN h2) with the system's roots (as the OpenTelemetry exporters read the
 *   endpoint); without a port, 4317.
 * - Every call has a deadline (`grpc-timeout`, and the call is cancelled
 *   here when it passes): a collector that does not answer costs a pending
 *   call until then, never a request.
 * - Failures carry the gRPC status's name and the collector's message (or the
 *   connection's error), never the call's metadata; OTLP's retryable codes
 *   are marked `retryable` (the export queue tries those again).
 */
import * as http2 from "node:http2"
import { decodePartialSuccess } from "./read.ts"

export const TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
export const METRICS_EXPORT = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

/** gRPC metadata of an export call: lower-case ASCII keys, printable ASCII values. */
export type ExportMetadata = Readonly<Record<string, string>>

/** The gRPC status codes, by number. */
const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED"
] as const

export const GRPC_STATUS = {
  ok: 0,
  cancelled: 1,
  unknown: 2,
  deadlineExceeded: 4,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
  unauthenticated: 16,
  permissionDenied: 7
} as const

/** The gRPC codes OTLP calls retryable (the OTLP exporter specification): the collector may take the same export later. */
const RETRYABLE = new Set<number>([1, 4, 8, 10, 11, 14, 15])

/** A collector that took the export but refused part of it (`partial_success`). */
class PartialExport extends Error {
  constructor(rejected: number, message: string) {
    super(`the collector rejected ${rejected} item(s)${message === "" ? "" : `: ${message}`}`)
    this.name = "PartialExport"
  }
}

/** A rejection the collector reported in an export's response message, or undefined (a response that does not decode reports none). */
const partialFailureOf = (response: Buffer): PartialExport | undefined => {
  if (response.byteLength === 0) return undefined
  try {
    const partial = decodePartialSuccess(response)
    return partial === undefined ? undefined : new PartialExport(partial.rejected, partial.message.slice(0, 200))
  } catch {
    return undefined
  }
}

/** A gRPC status, described without the call's metadata; `retryable` for the codes OTLP says may pass. */
export class ExportCallError extends Error {
  readonly code: number
  readonly retryable: boolean
  constructor(code: number, details: string) {
    super(`${STATUS_NAMES[code] ?? code}: ${details}`)
    this.name = "ExportCallError"
    this.code = code
    this.retryable = RETRYABLE.has(code)
  }
}

/** The gRPC code of an answer without `grpc-status`, from its HTTP status (gRPC's "HTTP to gRPC status code mapping"). */
const codeOfHttpStatus = (status: number): number => {
  switch (status) {
    case 400:
      return GRPC_STATUS.internal
    case 401:
      return GRPC_STATUS.unauthenticated
    case 403:
      return GRPC_STATUS.permissionDenied
    case 404:
      return GRPC_STATUS.unimplemented
    case 429:
    case 502:
    case 503:
    case 504:
      return GRPC_STATUS.unavailable
    default:
      return GRPC_STATUS.unknown
  }
}

/** `grpc-message` is percent-encoded. */
const messageOf = (value: string | Array<string> | undefined): string => {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined) return ""
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

const statusOf = (value: string | Array<string> | undefined): number | undefined => {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined) return undefined
  const code = Number(text)
  return Number.isInteger(code) && code >= 0 ? code : GRPC_STATUS.unknown
}

const ignore = (): void => {}

/** The length prefix of a message (uncompressed): a fresh one per call (HTTP/2 may hold it until written). */
const messagePrefix = (length: number): Buffer => {
  const prefix = Buffer.allocUnsafe(5)
  prefix[0] = 0
  prefix.writeUInt32BE(length, 1)
  return prefix
}

export class OtlpGrpcChannel {
  /** `http://host:port` or `https://host:port`. */
  private readonly authority: string
  private session: http2.ClientHttp2Session | undefined
  /** Calls in flight on `session` (it holds the process open while there are any). */
  private active = 0
  private closed = false

  /** `url`: the collector as `http://host:port` or `https://host:port`. */
  constructor(url: string) {
    const parsed = new URL(url)
    const port = parsed.port === "" ? "4317" : parsed.port
    this.authority = `${parsed.protocol === "https:" ? "https:" : "http:"}//${parsed.hostname}:${port}`
  }

  /** The open session, or a new one. */
  private connect(): http2.ClientHttp2Session {
    const open = this.session
    if (open !== undefined && !open.closed && !open.destroyed) return open
    const session = http2.connect(this.authority)
    const forget = (): void => {
      if (this.session === session) {
        this.session = undefined
        this.active = 0
      }
    }
    // A connection's failure reaches every call on it (each call's stream fails): here it only ends the session.
    session.on("error", forget)
    session.on("close", forget)
    session.on("goaway", forget)
    session.unref()
    this.session = session
    this.active = 0
    return session
  }

  private hold(session: http2.ClientHttp2Session): void {
    if (this.session === session && this.active++ === 0) session.ref()
  }

  private release(session: http2.ClientHttp2Session): void {
    if (this.session === session && --this.active === 0) session.unref()
  }

  /** One export call: resolves when the collector took it whole, rejects otherwise (never with the metadata in the message). */
  send(method: string, request: Buffer, metadata: ExportMetadata | undefined, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new ExportCallError(GRPC_STATUS.unavailable, "the channel is closed"))
      let session: http2.ClientHttp2Session
      let stream: http2.ClientHttp2Stream
      try {
        session = this.connect()
        stream = session.request({
          ":method": "POST",
          ":path": method,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": `${Math.min(99_999_999, Math.max(1, Math.ceil(timeoutMs)))}m`,
          ...metadata
        })
      } catch (error) {
        return reject(new ExportCallError(GRPC_STATUS.unavailable, error instanceof Error ? error.message : String(error)))
      }
      this.hold(session)
      let done = false
      let httpStatus = 0
      let code: number | undefined
      let message = ""
      const chunks: Array<Buffer> = []
      const finish = (error: Error | undefined): void => {
        if (done) return
        done = true
        clearTimeout(timer)
        this.release(session)
        if (error !== undefined) return reject(error)
        resolve()
      }
      const timer = setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL)
        finish(new ExportCallError(GRPC_STATUS.deadlineExceeded, `no answer within ${timeoutMs / 1000} s`))
      }, timeoutMs)
      timer.unref()
      stream.on("response", (headers) => {
        httpStatus = Number(headers[":status"])
        // A trailers-only answer (an error, usually) has its status in the headers.
        const status = statusOf(headers["grpc-status"])
        if (status !== undefined) {
          code = status
          message = messageOf(headers["grpc-message"])
        }
      })
      stream.on("trailers", (trailers) => {
        const status = statusOf(trailers["grpc-status"])
        if (status !== undefined) {
          code = status
          message = messageOf(trailers["grpc-message"])
        }
      })
      stream.on("data", (chunk: Buffer) => void chunks.push(chunk))
      stream.on("error", (error) => finish(new ExportCallError(GRPC_STATUS.unavailable, error.message)))
      stream.on("close", () => {
        if (code === undefined) {
          if (httpStatus !== 0 && httpStatus !== 200) return finish(new ExportCallError(codeOfHttpStatus(httpStatus), `the collector answered HTTP ${httpStatus}`))
          return finish(new ExportCallError(httpStatus === 0 ? GRPC_STATUS.unavailable : GRPC_STATUS.internal, "the call ended without a status"))
        }
        if (code !== GRPC_STATUS.ok) return finish(new ExportCallError(code, message))
        const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
        // One length-prefixed message (uncompressed: nothing here asks for compression).
        const partial = body.byteLength >= 5 && body[0] === 0 ? partialFailureOf(body.subarray(5, 5 + body.readUInt32BE(1))) : undefined
        finish(partial)
      })
      stream.write(messagePrefix(request.byteLength))
      stream.end(request)
    })
  }

  /**
   * Whether the collector takes a connection within `timeoutMs`: undefined
   * when it does (or the channel closed meanwhile), else why not. Never
   * rejects; the connection it opens is the one exports then use.
   */
  answers(timeoutMs: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      if (this.closed) return resolve(undefined)
      let session: http2.ClientHttp2Session
      try {
        session = this.connect()
      } catch {
        return resolve("the connection failed")
      }
      if (session.connecting === false && !session.destroyed) return resolve(undefined)
      const timer = setTimeout(() => settle(`no connection within ${timeoutMs / 1000} s`), timeoutMs)
      timer.unref()
      const onConnect = (): void => settle(undefined)
      const onError = (): void => settle("the connection failed")
      const onClose = (): void => settle(this.closed ? undefined : "the connection failed")
      const settle = (problem: string | undefined): void => {
        clearTimeout(timer)
        session.off("connect", onConnect)
        session.off("error", onError)
        session.off("close", onClose)
        resolve(problem)
      }
      session.once("connect", onConnect)
      session.once("error", onError)
      session.once("close", onClose)
    })
  }

  close(): void {
    this.closed = true
    const session = this.session
    this.session = undefined
    if (session === undefined) return
    session.on("error", ignore)
    session.close()
  }
}

/** Printable ASCII: what a gRPC metadata value may carry. */
const METADATA_VALUE = /^[\x20-\x7e]*$/

/**
 * `authorization: Bearer <token>` metadata for export calls. A token gRPC
 * metadata cannot carry (anything but printable ASCII) throws an error that
 * does not quote it.
 */
export const bearerMetadata = (token: string): ExportMetadata => {
  const value = `Bearer ${token}`
  if (!METADATA_VALUE.test(value)) {
    throw new Error("the collector token has characters gRPC metadata cannot carry (printable ASCII only): nothing is exported with it")
  }
  return { authorization: value }
}
