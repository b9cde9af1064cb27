/**
 * Reading a JSON body whole, on a scripted request: the bytes arrive in the
 * chunks the test chooses. A body of many chunks with a declared length must
 * not hold on to the chunks already read (kept to the end, a 10 MB body's
 * chunks outlived young-generation GCs and their memory stayed with the
 * process long after the request), and must come out byte for byte.
 */
import { Effect } from "effect"
import { EventEmitter } from "node:events"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { describe, expect, it } from "vitest"
import { readJsonObject } from "../../src/http/body.ts"
import type { HttpRequestContext } from "../../src/http/context.ts"

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const body = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "x".repeat(200_000) }] })
const bytes = Buffer.from(body)
const pieces = (size: number): Array<Buffer> => Array.from({ length: Math.ceil(bytes.byteLength / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size))

/** A request with `headers` whose body the test emits; the read runs as the gateway runs it. */
const scripted = (headers: Record<string, string>) => {
  const req = Object.assign(new EventEmitter(), { headers: { "content-type": "application/json", ...headers } })
  const ctx = { req, path: "/v1/chat/completions" } as unknown as HttpRequestContext
  const read = Effect.runPromise(readJsonObject(ctx, 1024 * 1024))
  /** Emits a copy of `piece` (so nothing but the reader can hold it) and returns a weak reference to it. */
  const send = (piece: Buffer): WeakRef<Buffer> => {
    const chunk = Buffer.from(piece)
    req.emit("data", chunk)
    return new WeakRef(chunk)
  }
  return { req, read, send }
}

describe("reading a JSON body whole", () => {
  it("does not keep the chunks of a body with a declared length once they are read", async () => {
    const { req, read, send } = scripted({ "content-length": String(bytes.byteLength) })
    const [first, ...rest] = pieces(64 * 1024)
    const refs = [send(first), send(rest[0])]
    // A weak reference holds its target to the end of the current job; then a full GC.
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    expect(refs.map((ref) => ref.deref() === undefined)).toEqual([true, true])
    for (const piece of rest.slice(1)) send(piece)
    req.emit("end")
    const { raw, json } = await read
    expect(raw.equals(bytes)).toBe(true)
    expect(json).toEqual(JSON.parse(body))
  })

  it("joins a body of many chunks without a declared length", async () => {
    const { req, read, send } = scripted({ "transfer-encoding": "chunked" })
    for (const piece of pieces(10_000)) send(piece)
    req.emit("end")
    const { raw } = await read
    expect(raw.equals(bytes)).toBe(true)
  })

  it("reads a body of one chunk as it came", async () => {
    const { req, read, send } = scripted({ "content-length": String(bytes.byteLength) })
    send(bytes)
    req.emit("end")
    const { raw } = await read
    expect(raw.equals(bytes)).toBe(true)
  })
})
