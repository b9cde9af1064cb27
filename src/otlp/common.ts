/**
 * The OTLP messages every signal shares (opentelemetry/proto/common/v1 and
 * resource/v1): attributes (`KeyValue` / `AnyValue`), the resource and the
 * instrumentation scope, and the framing of an export request around
 * messages already encoded.
 */
import { ProtoWriter, putVarint, utf8LengthOf, varintSize } from "./protobuf.ts"

const ANY_STRING = 1
const ANY_BOOL = 2
const ANY_INT = 3
const ANY_DOUBLE = 4
const ANY_ARRAY = 5
const ARRAY_VALUES = 1
const KEY_VALUE_KEY = 1
const KEY_VALUE_VALUE = 2

/** Numbers that are whole and safe are `int_value`, others `double_value` (as the OpenTelemetry SDK writes them). */
const writeNumber = (w: ProtoWriter, value: number): void => {
  if (Number.isSafeInteger(value)) w.int64Field(ANY_INT, value)
  else w.doubleField(ANY_DOUBLE, value)
}

/** An `AnyValue` body; anything that is not a string, number, boolean or array of those is recorded as its JSON text. */
const writeAnyValue = (w: ProtoWriter, value: unknown): void => {
  switch (typeof value) {
    case "string":
      return w.stringField(ANY_STRING, value)
    case "number":
      return writeNumber(w, value)
    case "boolean":
      return w.boolField(ANY_BOOL, value)
    case "bigint":
      return w.stringField(ANY_STRING, value.toString())
    default:
      if (Array.isArray(value)) {
        const array = w.begin(ANY_ARRAY)
        for (const item of value) {
          const entry = w.begin(ARRAY_VALUES)
          writeAnyValue(w, item)
          w.end(entry)
        }
        return w.end(array)
      }
      return w.stringField(ANY_STRING, textOf(value))
  }
}

const textOf = (value: unknown): string => {
  if (value === undefined || value === null) return String(value)
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The `key` field of a `KeyValue` (tag, length, UTF-8), encoded once per key name. */
const encodedKeys = new Map<string, Uint8Array>()
const MAX_ENCODED_KEYS = 4096

const keyField = (key: string): Uint8Array => {
  let encoded = encodedKeys.get(key)
  if (encoded === undefined) {
    const w = new ProtoWriter(key.length * 3 + 8)
    w.stringField(KEY_VALUE_KEY, key)
    encoded = w.bytes()
    // Keys are the gateway's own attribute names; bound the map anyway.
    if (encodedKeys.size < MAX_ENCODED_KEYS) encodedKeys.set(key, encoded)
  }
  return encoded
}

/** `Buffer#utf8Write`: the native writer behind `Buffer#write(…, "utf8")`, without its argument checks. */
type NativeWrite = Buffer & { utf8Write(text: string, offset: number, length: number): number }

/** ASCII strings up to this long are copied by hand: a call to the native writer costs more. */
const COPY_BY_HAND = 16

/** `text` (whose UTF-8 length `utf8LengthOf` gave) into `buf` at `pos`; returns the position after it. */
const putText = (buf: Buffer, pos: number, text: string, length: number): number => {
  if (length === text.length && length <= COPY_BY_HAND) {
    for (let i = 0; i < length; i++) buf[pos++] = text.charCodeAt(i)
    return pos
  }
  return pos + (buf as NativeWrite).utf8Write(text, pos, length)
}

/** An array of strings (`finish_reasons`, `stop_sequences`): the `ArrayValue` body's length, or -1 for another array. */
const stringArrayLength = (values: ReadonlyArray<unknown>): number => {
  let length = 0
  for (const item of values) {
    if (typeof item !== "string") return -1
    const text = utf8LengthOf(item)
    const any = 1 + varintSize(text) + text
    length += 1 + varintSize(any) + any
  }
  return length
}

/**
 * One `KeyValue` as repeated field `field` (below 16) of the enclosing
 * message. Strings, whole non-negative numbers, booleans and arrays of
 * strings (nearly every attribute the gateway writes) are written in one go
 * with their lengths known up front; other values through nested messages.
 */
export const writeAttribute = (w: ProtoWriter, field: number, key: string, value: unknown): void => {
  const keyBytes = keyField(key)
  const keyLength = keyBytes.length
  let valueLength: number
  let anyLength: number
  let kind: number
  switch (typeof value) {
    case "string":
      valueLength = utf8LengthOf(value)
      anyLength = 1 + varintSize(valueLength) + valueLength
      kind = ANY_STRING
      break
    case "boolean":
      valueLength = 1
      anyLength = 2
      kind = ANY_BOOL
      break
    case "number":
      if (!(value >= 0 && Number.isSafeInteger(value))) return writeNested(w, field, keyBytes, value)
      valueLength = varintSize(value)
      anyLength = 1 + valueLength
      kind = ANY_INT
      break
    default:
      valueLength = Array.isArray(value) ? stringArrayLength(value) : -1
      if (valueLength < 0) return writeNested(w, field, keyBytes, value)
      anyLength = 1 + varintSize(valueLength) + valueLength
      kind = ANY_ARRAY
  }
  const kvLength = keyLength + 1 + varintSize(anyLength) + anyLength
  w.ensure(1 + varintSize(kvLength) + kvLength)
  const buf = w.buf
  let pos = w.pos
  buf[pos++] = (field << 3) | 2
  pos = putVarint(buf, pos, kvLength)
  // A builtin copy: cheaper than a loop for a key's 15 to 40 bytes.
  buf.set(keyBytes, pos)
  pos += keyLength
  buf[pos++] = (KEY_VALUE_VALUE << 3) | 2
  pos = putVarint(buf, pos, anyLength)
  if (kind === ANY_STRING) {
    buf[pos++] = (ANY_STRING << 3) | 2
    pos = putVarint(buf, pos, valueLength)
    pos = putText(buf, pos, value as string, valueLength)
  } else if (kind === ANY_BOOL) {
    buf[pos++] = ANY_BOOL << 3
    buf[pos++] = value === true ? 1 : 0
  } else if (kind === ANY_INT) {
    buf[pos++] = ANY_INT << 3
    pos = putVarint(buf, pos, value as number)
  } else {
    buf[pos++] = (ANY_ARRAY << 3) | 2
    pos = putVarint(buf, pos, valueLength)
    for (const item of value as ReadonlyArray<string>) {
      const text = utf8LengthOf(item)
      buf[pos++] = (ARRAY_VALUES << 3) | 2
      pos = putVarint(buf, pos, 1 + varintSize(text) + text)
      buf[pos++] = (ANY_STRING << 3) | 2
      pos = putVarint(buf, pos, text)
      pos = putText(buf, pos, item, text)
    }
  }
  w.pos = pos
}

const writeNested = (w: ProtoWriter, field: number, keyBytes: Uint8Array, value: unknown): void => {
  const kv = w.begin(field)
  w.raw(keyBytes)
  const any = w.begin(KEY_VALUE_VALUE)
  writeAnyValue(w, value)
  w.end(any)
  w.end(kv)
}

/** Every entry of `attributes` (undefined values skipped) as repeated field `field`. */
export const writeAttributes = (w: ProtoWriter, field: number, attributes: Readonly<Record<string, unknown>>): void => {
  for (const key in attributes) {
    const value = attributes[key]
    if (value !== undefined) writeAttribute(w, field, key, value)
  }
}

/** `service.name`, `deployment.environment.name` and who wrote the telemetry, as the resource of every export. */
export const resourceAttributes = (serviceName: string, environment: string): Record<string, string> => ({
  "service.name": serviceName,
  "deployment.environment.name": environment,
  "telemetry.sdk.name": "model-gateway",
  "telemetry.sdk.language": "nodejs"
})

/** An export request's fixed head: the resource (field 1 of `Resource*`) and the scope (field 1 of `Scope*`), encoded once. */
export interface RequestHead {
  readonly resource: Buffer
  readonly scope: Buffer
}

export const requestHead = (resource: Readonly<Record<string, unknown>>, scopeName: string): RequestHead => {
  const w = new ProtoWriter(512)
  const r = w.begin(1)
  writeAttributes(w, 1, resource)
  // dropped_attributes_count: 0, written as the OpenTelemetry SDK writes it (test/otlp/sdk-bytes.test.ts).
  w.uintField(2, 0)
  w.end(r)
  const resourceBytes = w.bytes()
  w.reset()
  const s = w.begin(1)
  w.stringField(1, scopeName)
  w.end(s)
  return { resource: resourceBytes, scope: w.bytes() }
}

/**
 * A whole export request (`ExportTraceServiceRequest` or
 * `ExportMetricsServiceRequest`: one `Resource*` of one `Scope*`) around
 * `items`, the scope's repeated field 2 (spans or metrics) already encoded.
 * One allocation, one copy of the items.
 */
export const exportRequest = (head: RequestHead, items: Uint8Array): Buffer => {
  const scopeLength = head.scope.byteLength + items.byteLength
  const resourceLength = head.resource.byteLength + 1 + varintSize(scopeLength) + scopeLength
  const total = 1 + varintSize(resourceLength) + resourceLength
  const buf = Buffer.allocUnsafe(total)
  let at = 0
  buf[at++] = 0x0a // field 1 (resource_spans / resource_metrics), length-delimited
  at = putVarint(buf, at, resourceLength)
  buf.set(head.resource, at)
  at += head.resource.byteLength
  buf[at++] = 0x12 // field 2 (scope_spans / scope_metrics), length-delimited
  at = putVarint(buf, at, scopeLength)
  buf.set(head.scope, at)
  at += head.scope.byteLength
  buf.set(items, at)
  return buf
}
