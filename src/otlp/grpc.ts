/**
 * OTLP over gRPC: the collector's `TraceService/Export` and
 * `MetricsService/Export` unary calls, with requests already encoded
 * (protobuf bytes in, the response's partial-success report out).
 *
 * Details
 * - One channel per collector address, shared by every credential: the
 *   credential travels as the call's `authorization` metadata.
 * - `http://` is plaintext, `https://` is TLS with the system's roots (as the
 *   OpenTelemetry exporters read the endpoint); without a port, 4317.
 * - Every call has a deadline; a collector that does not answer costs a
 *   pending call until then, never a request.
 */
import * as grpc from "@grpc/grpc-js"
import { decodePartialSuccess } from "./read.ts"

export const TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
export const METRICS_EXPORT = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

const identity = (bytes: Buffer): Buffer => bytes

/** A collector that took the export but refused part of it (`partial_success`). */
class PartialExport extends Error {
  constructor(rejected: number, message: string) {
    super(`the collector rejected ${rejected} item(s)${message === "" ? "" : `: ${message}`}`)
    this.name = "PartialExport"
  }
}

/** A rejection the collector reported in an export's response, or undefined (a response that does not decode reports none). */
const partialFailureOf = (response: Buffer): PartialExport | undefined => {
  if (response.byteLength === 0) return undefined
  try {
    const partial = decodePartialSuccess(response)
    return partial === undefined ? undefined : new PartialExport(partial.rejected, partial.message.slice(0, 200))
  } catch {
    return undefined
  }
}

/** The gRPC codes OTLP calls retryable (the OTLP exporter specification): the collector may take the same export later. */
const RETRYABLE = new Set<number>([
  grpc.status.CANCELLED,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.ABORTED,
  grpc.status.OUT_OF_RANGE,
  grpc.status.UNAVAILABLE,
  grpc.status.DATA_LOSS
])

/** A gRPC status error, described without the call's metadata; `retryable` for the codes OTLP says may pass. */
class ExportCallError extends Error {
  readonly retryable: boolean
  constructor(error: grpc.ServiceError) {
    super(`${grpc.status[error.code] ?? error.code}: ${error.details}`)
    this.name = "ExportCallError"
    this.retryable = RETRYABLE.has(error.code)
  }
}

export class OtlpGrpcChannel {
  private readonly client: grpc.Client

  /** `url`: the collector as `http://host:port` or `https://host:port`. */
  constructor(url: string) {
    const parsed = new URL(url)
    const port = parsed.port === "" ? "4317" : parsed.port
    const credentials = parsed.protocol === "https:" ? grpc.credentials.createSsl() : grpc.credentials.createInsecure()
    this.client = new grpc.Client(`${parsed.hostname}:${port}`, credentials)
  }

  /** One export call: resolves when the collector took it whole, rejects otherwise (never with the metadata in the message). */
  send(method: string, request: Buffer, metadata: grpc.Metadata | undefined, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method,
        identity,
        identity,
        request,
        metadata ?? new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (error: grpc.ServiceError | null, response?: Buffer) => {
          if (error !== null) return reject(new ExportCallError(error))
          const partial = response === undefined ? undefined : partialFailureOf(response)
          if (partial !== undefined) return reject(partial)
          resolve()
        }
      )
    })
  }

  /**
   * Whether the collector takes a connection within `timeoutMs`: undefined
   * when it does (or the channel closed meanwhile), else why not. Never
   * rejects; the connection it opens is the one exports then use.
   */
  answers(timeoutMs: number): Promise<string | undefined> {
    const channel = this.client.getChannel()
    const deadline = Date.now() + timeoutMs
    return new Promise((resolve) => {
      const check = (): void => {
        const state = channel.getConnectivityState(true)
        if (state === grpc.connectivityState.READY || state === grpc.connectivityState.SHUTDOWN) return resolve(undefined)
        if (state === grpc.connectivityState.TRANSIENT_FAILURE) return resolve("the connection failed")
        channel.watchConnectivityState(state, deadline, (error) => (error === undefined ? check() : resolve(`no connection within ${timeoutMs / 1000} s`)))
      }
      check()
    })
  }

  close(): void {
    this.client.close()
  }
}

/**
 * `authorization: Bearer <token>` metadata for export calls. A token gRPC
 * metadata cannot carry (anything but printable ASCII) throws an error that
 * does not quote it (grpc-js's own error quotes the whole value).
 */
export const bearerMetadata = (token: string): grpc.Metadata => {
  const metadata = new grpc.Metadata()
  try {
    metadata.set("authorization", `Bearer ${token}`)
  } catch {
    throw new Error("the collector token has characters gRPC metadata cannot carry (printable ASCII only): nothing is exported with it")
  }
  return metadata
}
