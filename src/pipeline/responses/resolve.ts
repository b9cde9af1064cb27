/**
 * What a Responses request asks of the store, and the request it becomes
 * once the store answered (pure: no Redis here).
 *
 * - `stateNeeds`: the `previous_response_id` and the ids of `item_reference`
 *   input items; nothing when the request names neither.
 * - `resolveRequest`: the body without `previous_response_id`, its input the
 *   previous response's conversation (earlier turns, its input, its output)
 *   followed by the request's own items, each `item_reference` replaced by the
 *   stored item it names. An id the store does not know (unknown, expired, or
 *   another caller's: they cannot be told apart) is the API's 400 naming the
 *   field, never a silent drop.
 * - `storedResponseOf`: what is kept of an answered request.
 */
import { Result } from "effect"
import type { StoredItem, StoredResponse } from "./entry.ts"

export interface StateNeeds {
  readonly previousResponseId: string | undefined
  /** Ids of `item_reference` items, in input order. */
  readonly itemIds: ReadonlyArray<string>
}

/** A request the store cannot complete: the API's 400 with `param`. */
export interface StateRefusal {
  readonly param: string
  readonly message: string
  /**
   * Nothing the request names is known to the store, for any caller: the ids
   * may be a native Responses provider's own, so the request may go to such a
   * provider as it is (and is this 400 wherever it must be translated).
   */
  readonly providerOwn?: boolean | undefined
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** The request's `input` as items: a string is one user message. */
export const inputItemsOf = (input: unknown): ReadonlyArray<StoredItem> => {
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }]
  return Array.isArray(input) ? input.filter(isRecord) : []
}

const isReference = (item: StoredItem): boolean => item.type === "item_reference" && typeof item.id === "string"

/** What the request needs from the store; undefined when nothing. */
export const stateNeeds = (json: Readonly<Record<string, unknown>>): StateNeeds | undefined => {
  const previous = json.previous_response_id
  const previousResponseId = typeof previous === "string" && previous !== "" ? previous : undefined
  const itemIds = Array.isArray(json.input) ? json.input.filter((item): item is StoredItem => isRecord(item) && isReference(item)).map((item) => item.id as string) : []
  if (previousResponseId === undefined && itemIds.length === 0) return undefined
  return { previousResponseId, itemIds }
}

/** What the store answered for a request's needs. */
export interface StoredState {
  readonly previous: StoredResponse | undefined
  /** Stored items by id (those the store knew). */
  readonly items: ReadonlyMap<string, StoredItem>
  /** The ids asked for that some caller's store claimed (kept, for this caller or another). */
  readonly claimed: ReadonlySet<string>
}

/** The conversation a response continues: its earlier turns, its input, its output. */
export const conversationOf = (response: StoredResponse): ReadonlyArray<StoredItem> => [...response.context, ...response.input, ...response.output]

export interface ResolvedRequest {
  /** The body to serve: full input, no `previous_response_id`. */
  readonly json: Record<string, unknown>
  /** The items before the request's own (the previous response's conversation). */
  readonly context: ReadonlyArray<StoredItem>
  /** The request's own input items, references replaced. */
  readonly input: ReadonlyArray<StoredItem>
}

const notFound = (param: string, what: string, id: string): StateRefusal => ({
  param,
  message: `${what} with id '${id}' not found.`
})

/** The request with its state filled in from the store, or the 400 naming what was not found. */
export const resolveRequest = (
  json: Readonly<Record<string, unknown>>,
  needs: StateNeeds,
  stored: StoredState
): Result.Result<ResolvedRequest, StateRefusal> => {
  const providerOwn = stored.claimed.size === 0 && stored.previous === undefined && stored.items.size === 0
  if (needs.previousResponseId !== undefined && stored.previous === undefined) {
    return Result.fail({ ...notFound("previous_response_id", "Previous response", needs.previousResponseId), providerOwn })
  }
  const outgrown = stored.previous?.outgrownBytes
  if (outgrown !== undefined) {
    return Result.fail({
      param: "previous_response_id",
      message: `the conversation (${outgrown} bytes stored) outgrew the gateway's Responses store (responses.max_entry_size_bytes): start a new conversation, or send its items in input without previous_response_id`
    })
  }
  const context = stored.previous === undefined ? [] : conversationOf(stored.previous)
  const known = new Map(stored.items)
  for (const item of context) if (typeof item.id === "string" && !known.has(item.id)) known.set(item.id, item)
  const input: Array<StoredItem> = []
  for (const [index, item] of inputItemsOf(json.input).entries()) {
    if (!isReference(item)) {
      input.push(item)
      continue
    }
    const found = known.get(item.id as string)
    if (found === undefined) return Result.fail({ ...notFound(`input[${index}].id`, "Item", item.id as string), providerOwn })
    input.push(found)
  }
  const { previous_response_id: _previous, ...rest } = json
  return Result.succeed({ json: { ...rest, input: [...context, ...input] }, context, input })
}

/** What is kept of an answered request (`response` is the Response object the caller got). */
export const storedResponseOf = (
  request: Readonly<Record<string, unknown>>,
  resolved: Pick<ResolvedRequest, "context" | "input">,
  response: Readonly<Record<string, unknown>>
): StoredResponse | undefined => {
  if (typeof response.id !== "string" || !Array.isArray(response.output)) return undefined
  return {
    id: response.id,
    createdAt: typeof response.created_at === "number" ? response.created_at : Math.floor(Date.now() / 1000),
    model: typeof response.model === "string" ? response.model : String(request.model),
    status: typeof response.status === "string" ? response.status : "completed",
    instructions: request.instructions ?? null,
    context: resolved.context,
    input: resolved.input,
    output: response.output.filter(isRecord),
    usage: response.usage ?? null,
    previousResponseId: typeof request.previous_response_id === "string" ? request.previous_response_id : null
  }
}
