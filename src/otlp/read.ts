/**
 * Reading protobuf messages back, field by field, and the one message the
 * exporter reads: the `partial_success` of a collector's export response
 * (grpc.ts). Decoding whole export requests (decode.ts) builds on this and
 * is for the in-memory test layer and the tests, never loaded by the server.
 */
/** A message's fields by number; each value is a varint (bigint), a fixed 32/64 (bytes) or a length-delimited slice. */
export type Fields = Map<number, Array<bigint | Uint8Array>>

const decoder = new TextDecoder()

export const readFields = (buf: Uint8Array): Fields => {
  const fields: Fields = new Map()
  let pos = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (pos >= buf.length) throw new Error("truncated varint")
      const byte = buf[pos++]
      result |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return result
      shift += 7n
    }
  }
  while (pos < buf.length) {
    const tag = Number(varint())
    const field = tag >>> 3
    const wire = tag & 7
    let value: bigint | Uint8Array
    // A field that runs past the message's end is refused, as a collector refuses it.
    const take = (length: number): Uint8Array => {
      if (pos + length > buf.length) throw new Error(`truncated field ${field}: ${length} bytes at ${pos} of ${buf.length}`)
      const bytes = buf.subarray(pos, pos + length)
      pos += length
      return bytes
    }
    switch (wire) {
      case 0:
        value = varint()
        break
      case 1:
        value = take(8)
        break
      case 2:
        value = take(Number(varint()))
        break
      case 5:
        value = take(4)
        break
      default:
        throw new Error(`unsupported wire type ${wire}`)
    }
    const list = fields.get(field)
    if (list === undefined) fields.set(field, [value])
    else list.push(value)
  }
  return fields
}

export const bytesOf = (fields: Fields, n: number): Array<Uint8Array> => (fields.get(n) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array)
export const first = (fields: Fields, n: number): Uint8Array | undefined => bytesOf(fields, n)[0]
export const str = (fields: Fields, n: number): string => {
  const value = first(fields, n)
  return value === undefined ? "" : decoder.decode(value)
}
export const uint = (fields: Fields, n: number): number => {
  const value = (fields.get(n) ?? [])[0]
  return typeof value === "bigint" ? Number(value) : 0
}

/**
 * The `partial_success` of an export response (`ExportTraceServiceResponse`,
 * `ExportMetricsServiceResponse`: field 1, its rejected count at 1 and its
 * message at 2), or undefined when the response reports none. Throws on bytes
 * that are not a message.
 */
export const decodePartialSuccess = (bytes: Uint8Array): { readonly rejected: number; readonly message: string } | undefined => {
  const partial = first(readFields(bytes), 1)
  if (partial === undefined) return undefined
  const fields = readFields(partial)
  const rejected = uint(fields, 1)
  const message = str(fields, 2)
  return rejected > 0 || message !== "" ? { rejected, message } : undefined
}
