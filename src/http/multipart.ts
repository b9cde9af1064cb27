/**
 * Multipart forms that are routed by a field which may arrive after the file
 * (transcriptions: the OpenAI SDK sends `file` before `model`). The incoming
 * form is parsed as it streams (Effect's multipart parser), every file part is
 * spooled to a private temporary directory as it arrives, and an outgoing form
 * is re-encoded per attempt from the fields and the spooled files, read back
 * from disk as a stream.
 *
 * Details
 * - Memory stays bounded by the parser's and the file streams' chunk sizes:
 *   no file is ever held whole.
 * - The temporary directory belongs to the caller's `Scope`: it is removed
 *   when the request ends, whether it succeeded, failed or the caller left.
 * - Limits: a text field at most 1 MiB, at most 1000 parts (413 beyond).
 *
 * Gotchas
 * - A part counts as a file when it has a `filename` (or is
 *   `application/octet-stream`); a `file` sent as a plain text field is not one.
 */
import * as NodeMultipart from "@effect/platform-node/NodeMultipart"
import { ByteSize, Effect, Stream } from "effect"
import type { Scope } from "effect"
import * as Multipart from "effect/http/Multipart"
import { randomBytes } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import type { IncomingMessage } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { GatewayError } from "../domain/index.ts"
import { bodyRead } from "./reclaim.ts"

export interface FormField {
  readonly _tag: "Field"
  readonly name: string
  readonly value: string
}

export interface SpooledFile {
  readonly _tag: "File"
  readonly name: string
  readonly filename: string
  readonly contentType: string
  /** Where the bytes were spooled; valid while the spooling scope is open. */
  readonly path: string
  readonly size: number
}

export type FormPart = FormField | SpooledFile

/** The parts of a form in arrival order. */
export interface SpooledForm {
  readonly parts: ReadonlyArray<FormPart>
}

const MAX_FIELD_BYTES = 1024 * 1024
const MAX_PARTS = 1000

/** `multipart/form-data` with a boundary parameter. */
export const isMultipartForm = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^\s*multipart\/form-data\s*;(?:.*;)?\s*boundary=/i.test(contentType)

const formError = (error: Multipart.MultipartError): GatewayError => {
  switch (error.reason._tag) {
    case "FieldTooLarge":
      return new GatewayError({ status: 413, code: "request_too_large", message: `a multipart text field exceeds ${MAX_FIELD_BYTES} bytes` })
    case "TooManyParts":
      return new GatewayError({ status: 413, code: "request_too_large", message: `the multipart form has more than ${MAX_PARTS} parts` })
    case "FileTooLarge":
    case "BodyTooLarge":
      return new GatewayError({ status: 413, code: "request_too_large", message: "the multipart form is too large" })
    case "Parse":
      return new GatewayError({ status: 400, code: "invalid_request", message: "request body is not a valid multipart/form-data body" })
    case "InternalError":
      return new GatewayError({ status: 400, code: "invalid_request", message: "the multipart request body could not be read to the end" })
  }
}

/** 413 for an upload over `server.max_upload_bytes`. */
export const uploadTooLarge = (maxBytes: number): GatewayError =>
  new GatewayError({ status: 413, code: "request_too_large", message: `the upload exceeds ${maxBytes} bytes (server.max_upload_bytes)` })

/** A private directory under the OS temp dir, removed with everything in it when the scope closes. */
const scopedTempDirectory: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "gateway-form-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }).catch(() => undefined))
)

/**
 * Reads the whole form from the request: fields in memory, files written to
 * disk as they arrive. Fails with 400 (malformed, truncated) or 413 (limits).
 */
export const spoolForm = (req: IncomingMessage, maxBytes: number): Effect.Effect<SpooledForm, GatewayError, Scope.Scope> =>
  Number(req.headers["content-length"]) > maxBytes
    ? Effect.fail(uploadTooLarge(maxBytes))
    : Effect.flatMap(scopedTempDirectory, (dir) => {
    const parts: Array<FormPart> = []
    return Stream.runForEach(NodeMultipart.stream(req, req.headers), (part) => {
      if (part._tag === "Field") {
        parts.push({ _tag: "Field", name: part.key, value: part.value })
        return Effect.void
      }
      const path = join(dir, `part-${parts.length}`)
      const sink = createWriteStream(path)
      return Effect.tryPromise({
        try: (signal) => pipeline(NodeMultipart.fileToReadable(part), sink, { signal }),
        catch: () => Multipart.MultipartError.fromReason("InternalError")
      }).pipe(
        Effect.map(() => {
          parts.push({ _tag: "File", name: part.key, filename: part.name, contentType: part.contentType, path, size: sink.bytesWritten })
        })
      )
    }).pipe(
      Effect.provideService(Multipart.MaxFieldSize, ByteSize.bytes(MAX_FIELD_BYTES)),
      Effect.provideService(Multipart.MaxFileSize, ByteSize.bytes(maxBytes)),
      Effect.provideService(Multipart.MaxParts, MAX_PARTS),
      Effect.mapError((error) => (error.reason._tag === "FileTooLarge" ? uploadTooLarge(maxBytes) : formError(error))),
      Effect.map(() => {
        bodyRead(parts.reduce((bytes, part) => bytes + (part._tag === "File" ? part.size : part.value.length), 0))
        return { parts }
      })
    )
  })

/** A boundary that cannot plausibly occur in the content (128 random bits). */
export const freshBoundary = (): string => `gateway-${randomBytes(16).toString("hex")}`

/** Quotes a name for `Content-Disposition` the way browsers do (WHATWG form encoding). */
const quoted = (value: string): string =>
  `"${value.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")}"`

const partHead = (part: FormPart, boundary: string): string =>
  part._tag === "Field"
    ? `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}\r\n\r\n`
    : `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}; filename=${quoted(part.filename)}\r\nContent-Type: ${
      part.contentType.replace(/[\r\n]/g, "")
    }\r\n\r\n`

const CRLF = Buffer.from("\r\n")

async function* formChunks(parts: ReadonlyArray<FormPart>, boundary: string): AsyncGenerator<Buffer> {
  for (const part of parts) {
    yield Buffer.from(partHead(part, boundary))
    if (part._tag === "Field") yield Buffer.from(part.value)
    else yield* createReadStream(part.path, { highWaterMark: 64 * 1024 })
    yield CRLF
  }
  yield Buffer.from(`--${boundary}--\r\n`)
}

/** Byte length of `encodeForm(parts, boundary)`. */
export const encodedFormLength = (parts: ReadonlyArray<FormPart>, boundary: string): number =>
  parts.reduce(
    (total, part) =>
      total + Buffer.byteLength(partHead(part, boundary)) + (part._tag === "Field" ? Buffer.byteLength(part.value) : part.size) + CRLF.byteLength,
    Buffer.byteLength(`--${boundary}--\r\n`)
  )

/**
 * The form as a fresh `multipart/form-data` byte stream, files read from their
 * spooled copies. Destroying the stream closes the file it is reading.
 */
export const encodeForm = (parts: ReadonlyArray<FormPart>, boundary: string): Readable =>
  Readable.from(formChunks(parts, boundary), { objectMode: false })
