/**
 * The protobuf wire format, written straight into one growing buffer: just
 * what the OTLP messages need (varints, fixed64, doubles, strings, bytes,
 * nested messages).
 *
 * Details
 * - A nested message is written in place: one byte is kept for its length,
 *   and when the body turns out to need more (128 bytes or longer) it is moved
 *   up by the difference. Lengths are always the shortest varint, as every
 *   protobuf encoder writes them.
 * - Strings shorter than 43 characters cannot exceed 127 UTF-8 bytes, so
 *   their length fits the one kept byte and the text is written once with no
 *   separate length pass.
 * - Numbers are JavaScript numbers: varints up to 2^53, negative int64s in
 *   two's complement (ten bytes), fixed64 from bigint nanoseconds.
 */

const WIRE_VARINT = 0
const WIRE_FIXED64 = 1
const WIRE_LENGTH = 2
const WIRE_FIXED32 = 5

/** Bytes of `value` as a varint (0 ≤ value < 2^53). */
export const varintSize = (value: number): number => {
  if (value < 0x80) return 1
  if (value < 0x4000) return 2
  if (value < 0x200000) return 3
  if (value < 0x10000000) return 4
  let size = 5
  value = Math.floor(value / 0x800000000)
  while (value > 0) {
    value = Math.floor(value / 128)
    size++
  }
  return size
}

/** Writes `value` as a varint at `at` (room checked by the caller); returns the position after it. */
export const putVarint = (buf: Uint8Array, at: number, value: number): number => {
  // Below 2^31 with shifts; larger values (up to 2^53) by division.
  while (value > 0x7fffffff) {
    buf[at++] = (value % 128) | 128
    value = Math.floor(value / 128)
  }
  while (value >= 128) {
    buf[at++] = (value & 127) | 128
    value >>>= 7
  }
  buf[at++] = value
  return at
}

const SHORT_STRING = 42

/** UTF-8 bytes of `text`: counted by hand for short ASCII, natively otherwise. */
export const utf8LengthOf = (text: string): number => {
  if (text.length <= SHORT_STRING) {
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 128) return Buffer.byteLength(text, "utf8")
    return text.length
  }
  return Buffer.byteLength(text, "utf8")
}

/** The value of each hex digit by character code (upper and lower case; anything else 0). */
const HEX_DIGIT = new Uint8Array(128)
for (let i = 0; i < 16; i++) {
  HEX_DIGIT["0123456789abcdef".charCodeAt(i)] = i
  HEX_DIGIT["0123456789ABCDEF".charCodeAt(i)] = i
}

const SCRATCH_BYTES = new Uint8Array(8)
const SCRATCH_64 = new DataView(SCRATCH_BYTES.buffer)

export class ProtoWriter {
  buf: Buffer
  pos = 0

  constructor(initialSize: number = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialSize)
  }

  /** Room for `bytes` more. */
  ensure(bytes: number): void {
    const needed = this.pos + bytes
    if (needed <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < needed) size *= 2
    const grown = Buffer.allocUnsafe(size)
    this.buf.copy(grown, 0, 0, this.pos)
    this.buf = grown
  }

  /** Forgets everything written (the buffer is kept). */
  reset(): void {
    this.pos = 0
  }

  /** What was written, copied out. */
  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos))
  }

  varint(value: number): void {
    this.ensure(10)
    this.pos = putVarint(this.buf, this.pos, value)
  }

  private tag(field: number, wire: number): void {
    const tag = (field << 3) | wire
    if (tag < 128) {
      this.ensure(1)
      this.buf[this.pos++] = tag
    } else {
      this.varint(tag)
    }
  }

  /** A `uint64`, `uint32`, `enum` or non-negative `int64` field. */
  uintField(field: number, value: number): void {
    this.tag(field, WIRE_VARINT)
    this.varint(value)
  }

  /** An `int64` field (negative values in ten bytes of two's complement, as protobuf writes them). */
  int64Field(field: number, value: number): void {
    if (value >= 0) return this.uintField(field, value)
    this.tag(field, WIRE_VARINT)
    let rest = BigInt.asUintN(64, BigInt(value))
    this.ensure(10)
    while (rest >= 128n) {
      this.buf[this.pos++] = Number(rest & 127n) | 128
      rest >>= 7n
    }
    this.buf[this.pos++] = Number(rest)
  }

  boolField(field: number, value: boolean): void {
    this.tag(field, WIRE_VARINT)
    this.ensure(1)
    this.buf[this.pos++] = value ? 1 : 0
  }

  doubleField(field: number, value: number): void {
    this.tag(field, WIRE_FIXED64)
    this.ensure(8)
    this.buf.writeDoubleLE(value, this.pos)
    this.pos += 8
  }

  fixed64Field(field: number, value: bigint): void {
    this.tag(field, WIRE_FIXED64)
    this.ensure(8)
    // Through a 64-bit scratch (a builtin store, modulo 2^64): no BigInt arithmetic, nothing allocated.
    SCRATCH_64.setBigUint64(0, value, true)
    const buf = this.buf
    let pos = this.pos
    for (let i = 0; i < 8; i++) buf[pos++] = SCRATCH_BYTES[i]
    this.pos = pos
  }

  /** Four bytes, little-endian (no checks: callers pass what fits). */
  private uint32(value: number): void {
    const buf = this.buf
    let pos = this.pos
    buf[pos++] = value & 255
    buf[pos++] = (value >>> 8) & 255
    buf[pos++] = (value >>> 16) & 255
    buf[pos++] = value >>> 24
    this.pos = pos
  }

  fixed32Field(field: number, value: number): void {
    this.tag(field, WIRE_FIXED32)
    this.ensure(4)
    this.uint32(value)
  }

  stringField(field: number, value: string): void {
    this.tag(field, WIRE_LENGTH)
    if (value.length <= SHORT_STRING) {
      this.ensure(1 + value.length * 3)
      const buf = this.buf
      const start = this.pos + 1
      // ASCII byte by byte (the common case: names, ids, models); anything else through the UTF-8 encoder.
      let at = start
      for (let i = 0; i < value.length; i++) {
        const code = value.charCodeAt(i)
        if (code >= 128) {
          at = start + buf.write(value, start, "utf8")
          break
        }
        buf[at++] = code
      }
      buf[this.pos] = at - start
      this.pos = at
      return
    }
    const length = Buffer.byteLength(value, "utf8")
    this.varint(length)
    this.ensure(length)
    this.pos += this.buf.write(value, this.pos, length, "utf8")
  }

  /** A `bytes` field from lower-case hex (trace and span ids: 32 or 16 digits, never more than 254). */
  hexBytesField(field: number, hex: string): void {
    this.tag(field, WIRE_LENGTH)
    const length = hex.length >> 1
    this.ensure(1 + length)
    const buf = this.buf
    let pos = this.pos
    buf[pos++] = length
    for (let i = 0; i < hex.length; i += 2) buf[pos++] = (HEX_DIGIT[hex.charCodeAt(i)] << 4) | HEX_DIGIT[hex.charCodeAt(i + 1)]
    this.pos = pos
  }

  /** A `bytes` field of `length` random bytes (a fresh trace or span id; `Math.random`, as id generators use). */
  randomBytesField(field: number, length: number): void {
    this.tag(field, WIRE_LENGTH)
    this.ensure(1 + length)
    this.buf[this.pos++] = length
    for (let i = 0; i < length; i += 4) this.uint32((Math.random() * 0x100000000) >>> 0)
  }

  /** Opens a nested message (or packed field) `field`; returns where its body starts, for `end`. */
  begin(field: number): number {
    this.tag(field, WIRE_LENGTH)
    this.ensure(1)
    this.pos++
    return this.pos
  }

  /** Closes the nested message opened at `start`: writes its length, moving the body up if the length needs more than one byte. */
  end(start: number): void {
    const length = this.pos - start
    if (length < 128) {
      this.buf[start - 1] = length
      return
    }
    const extra = varintSize(length) - 1
    this.ensure(extra)
    this.buf.copyWithin(start + extra, start, this.pos)
    putVarint(this.buf, start - 1, length)
    this.pos += extra
  }

  /** Appends bytes already encoded (a pre-built message part). */
  raw(bytes: Uint8Array): void {
    const length = bytes.byteLength
    this.ensure(length)
    if (length > 64) {
      this.buf.set(bytes, this.pos)
      this.pos += length
      return
    }
    const buf = this.buf
    let pos = this.pos
    for (let i = 0; i < length; i++) buf[pos++] = bytes[i]
    this.pos = pos
  }
}
