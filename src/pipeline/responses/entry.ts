/**
 * What the Responses store keeps per response id: the response as the caller
 * got it (its output items, instructions, model, usage and status), the
 * request's own input items, and the conversation before them, so one read
 * resolves a `previous_response_id` however long the chain.
 *
 * The stored form is JSON (the items are the Responses API's own JSON); a
 * value that does not parse or lacks a field is no entry.
 */
import { Result } from "effect"

/** One Responses API item (message, function_call, reasoning, …), as the API writes it. */
export type StoredItem = Readonly<Record<string, unknown>>

export interface StoredResponse {
  /** `resp_…`: the id the caller got. */
  readonly id: string
  /** Unix seconds, as the API's `created_at`. */
  readonly createdAt: number
  readonly model: string
  readonly status: string
  /** The request's `instructions` (not carried to the next turn, as in the API). */
  readonly instructions: unknown
  /** The items of the turns before this request (earlier inputs and outputs, in order). */
  readonly context: ReadonlyArray<StoredItem>
  /** This request's own input items (what `/input_items` lists). */
  readonly input: ReadonlyArray<StoredItem>
  readonly output: ReadonlyArray<StoredItem>
  readonly usage: unknown
  readonly previousResponseId: string | null
  /**
   * Set on the marker kept instead of a response too large to store (its
   * sealed size): chaining from it is a clear 400, not an unknown id.
   */
  readonly outgrownBytes?: number | undefined
}

export const encodeStored = (response: StoredResponse): Uint8Array => Buffer.from(JSON.stringify(response))

const isItems = (value: unknown): value is ReadonlyArray<StoredItem> =>
  Array.isArray(value) && value.every((item) => typeof item === "object" && item !== null && !Array.isArray(item))

/** The stored response, or a failure saying why the bytes are none. */
export const decodeStored = (bytes: Uint8Array): Result.Result<StoredResponse, string> => {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"))
  } catch {
    return Result.fail("not JSON")
  }
  if (typeof value !== "object" || value === null) return Result.fail("not an object")
  const record = value as Record<string, unknown>
  if (typeof record.id !== "string" || typeof record.model !== "string" || typeof record.status !== "string") return Result.fail("no id, model or status")
  if (typeof record.createdAt !== "number") return Result.fail("no createdAt")
  if (!isItems(record.context) || !isItems(record.input) || !isItems(record.output)) return Result.fail("items are not objects")
  return Result.succeed({
    id: record.id,
    createdAt: record.createdAt,
    model: record.model,
    status: record.status,
    instructions: record.instructions ?? null,
    context: record.context,
    input: record.input,
    output: record.output,
    usage: record.usage ?? null,
    previousResponseId: typeof record.previousResponseId === "string" ? record.previousResponseId : null,
    ...(typeof record.outgrownBytes === "number" ? { outgrownBytes: record.outgrownBytes } : {})
  })
}
