/**
 * Content codings an upstream may apply unasked (the gateway never sends
 * `accept-encoding`): gzip, deflate and br, decoded with node:zlib, either as
 * a stream (a body being read) or whole (a bounded body, or a prefix of one).
 */
import * as Zlib from "node:zlib"

export type Decompressor = Zlib.Gunzip | Zlib.Inflate | Zlib.BrotliDecompress

const codingOf = (encoding: string | Array<string> | undefined): string | undefined => {
  const value = Array.isArray(encoding) ? encoding[0] : encoding
  const coding = value?.trim().toLowerCase()
  return coding === "" || coding === "identity" ? undefined : coding
}

/** Whether a `content-encoding` value names a coding (anything but none or identity). */
export const isEncoded = (encoding: string | Array<string> | undefined): boolean => codingOf(encoding) !== undefined

/** A streaming decoder for the coding, or undefined when there is none (or it is unknown). */
export const decompressorFor = (encoding: string | Array<string> | undefined): Decompressor | undefined => {
  switch (codingOf(encoding)) {
    case "gzip":
    case "x-gzip":
      return Zlib.createGunzip()
    case "deflate":
      return Zlib.createInflate()
    case "br":
      return Zlib.createBrotliDecompress()
    default:
      return undefined
  }
}

/**
 * A whole body (or its first part) decoded, at most `limit` bytes of output;
 * the body itself when it has no coding; undefined when it does not decode.
 */
export const decodeWhole = (encoding: string | Array<string> | undefined, body: Uint8Array, limit: number): Uint8Array | undefined => {
  // SYNC_FLUSH: a prefix of a longer body decodes as far as it goes instead of failing.
  const options = { maxOutputLength: limit, finishFlush: Zlib.constants.Z_SYNC_FLUSH }
  try {
    switch (codingOf(encoding)) {
      case undefined:
        return body
      case "gzip":
      case "x-gzip":
        return Zlib.gunzipSync(body, options)
      case "deflate":
        return Zlib.inflateSync(body, options)
      case "br":
        return Zlib.brotliDecompressSync(body, { maxOutputLength: limit, finishFlush: Zlib.constants.BROTLI_OPERATION_FLUSH })
      default:
        return undefined
    }
  } catch {
    return undefined
  }
}
