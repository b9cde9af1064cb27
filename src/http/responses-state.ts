/**
 * The Responses API's state around the chat program (`[responses]` on):
 * before it, a request's `previous_response_id` and `item_reference` items
 * are filled in from the store (one Redis round trip), so any provider can
 * serve it; after it, the answer is stored under its id (one round trip)
 * unless the request said `store: false`.
 *
 * Details
 * - Whose: the caller's own identity (`x-gw-authorization`'s gateway or
 *   platform key, else its provider key, else none: the project alone),
 *   never the provider credential the gateway adds, so a conversation moves
 *   between providers and one caller cannot read or chain another's.
 * - A store that is down fails a request that needs state with 503
 *   `INFRA_UNAVAILABLE`; a request that only writes state is answered and the
 *   write's failure logged (and `responses_store: "unstored"` on its request
 *   line; `stored` when it was kept).
 * - The answer stored is the Response object the caller got: a JSON body
 *   (sent with `store: true` and its `previous_response_id`), or a stream's
 *   `response.completed` event, stored when the body ended well (its bytes
 *   copied as they pass, up to four times `max_entry_size_bytes`; the push
 *   fast lane kept).
 * - With the store off this module is not on the path at all.
 */
import { Effect, Exit, Result } from "effect"
import type { Scope } from "effect"
import { fingerprinted } from "../config/index.ts"
import type { ResponsesSection } from "../config/index.ts"
import { GatewayError } from "../domain/index.ts"
import type { AnyGatewayFailure } from "../domain/index.ts"
import { bearerKey, callerKey, inputItemsOf, isValueBody, onBodyExit, reply, resolveRequest, stateNeeds, storedResponseOf, tapChunks } from "../pipeline/index.ts"
import type { Answer, CallerRequest, ChatInput, ReplyStream, RequestLogFields, ResponseScope, ResponseStore, ResolvedRequest } from "../pipeline/index.ts"

export interface ResponsesState {
  readonly store: ResponseStore["Service"]
  readonly section: ResponsesSection
}

/** The caller's identity for its stored responses: its gateway or platform key, else its provider key, else none. */
export const callerIdentity = (req: CallerRequest) => {
  const gateway = req.headers["x-gw-authorization"]
  return fingerprinted((typeof gateway === "string" ? bearerKey(gateway) : undefined) ?? callerKey(req.headers))
}

export const responseScopeOf = (state: ResponsesState, input: Pick<ChatInput, "ctx" | "project">): ResponseScope => ({
  section: state.section,
  projectId: input.project.projectId,
  caller: callerIdentity(input.ctx.req),
  ttlSeconds: input.project.settings.file.responses.store_ttl_seconds
})

/** A conversation too large to keep: the 400 says so, and what to do. */
const outgrown = (previousResponseId: string | undefined, bytes: number, section: ResponsesSection) =>
  new GatewayError({
    status: 400,
    code: "invalid_request",
    message: `the conversation (${bytes} bytes) outgrew the gateway's Responses store (responses.max_entry_size_bytes): start a new conversation, or send its items in input without previous_response_id (the limit is ${section.max_entry_size_bytes} bytes)`,
    param: previousResponseId === undefined ? "input" : "previous_response_id"
  })

/** A read of the store that failed (the 503) is noted on the request's log line, and so counted. */
export const unavailableNoted = <A, E>(log: RequestLogFields, read: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.tapError(read, () =>
    Effect.sync(() => {
      log.responses_store = "unavailable"
    }))

/**
 * The request ready to run: its state filled in (`conversation`, what is stored with its answer), or,
 * when nothing it names is known to the store, as it came (`providerOwn`: the 400 it is wherever it
 * must be translated; a native Responses provider may know its own ids, and keeps that conversation).
 */
type Ready =
  | { readonly input: ChatInput; readonly conversation: Pick<ResolvedRequest, "context" | "input">; readonly providerOwn?: undefined }
  | { readonly input: ChatInput; readonly conversation?: undefined; readonly providerOwn: GatewayError }

/** The request with its state filled in, or the API's 400 / the store's 503. */
const resolved = (
  state: ResponsesState,
  scope: ResponseScope,
  input: ChatInput
): Effect.Effect<Ready, AnyGatewayFailure> => {
  const needs = stateNeeds(input.json)
  if (needs === undefined) return Effect.succeed({ input, conversation: { context: [], input: inputItemsOf(input.json.input) } })
  return Effect.flatMap(unavailableNoted(input.ctx.log, state.store.state(scope, needs)), (stored): Effect.Effect<Ready, AnyGatewayFailure> => {
    const result = resolveRequest(input.json, needs, stored)
    if (Result.isFailure(result)) {
      const refusal = new GatewayError({ status: 400, code: "invalid_request", message: result.failure.message, param: result.failure.param })
      return result.failure.providerOwn === true ? Effect.succeed({ input, providerOwn: refusal }) : Effect.fail(refusal)
    }
    const json = result.success.json
    const raw = Buffer.from(JSON.stringify(json))
    if (raw.byteLength > state.section.max_entry_size_bytes) return Effect.fail(outgrown(needs.previousResponseId, raw.byteLength, state.section))
    return Effect.succeed({ input: { ...input, json, raw }, conversation: result.success })
  })
}

const LF = 0x0a
const DATA = Buffer.from("data:")
const FINAL_EVENT = /"type":\s*"response\.(?:completed|incomplete)"/

/** The `response` of a final event's data; undefined when it does not parse or has none. */
const responseOf = (data: string): Record<string, unknown> | undefined => {
  try {
    const event = JSON.parse(data) as { response?: unknown }
    return typeof event.response === "object" && event.response !== null ? event.response as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/** A streamed answer's bytes kept while it flows, for the Response object its last event carries (bounded). */
class StreamCopy {
  readonly #chunks: Array<Uint8Array> = []
  #bytes = 0
  #over = false
  readonly #limit: number
  constructor(limit: number) {
    this.#limit = limit
  }
  add(chunk: Uint8Array): void {
    if (this.#over) return
    this.#bytes += chunk.byteLength
    if (this.#bytes > this.#limit) {
      this.#over = true
      this.#chunks.length = 0
    } else this.#chunks.push(chunk)
  }
  /**
   * The `response` of the stream's last `response.completed` (or `.incomplete`) event; undefined when
   * none or too large. Its lines are read from the end, each decoded alone (a line feed is never part
   * of a multi-byte character, so a line decodes as it does within the whole).
   */
  finalResponse(): Record<string, unknown> | undefined {
    if (this.#over) return undefined
    const bytes = Buffer.concat(this.#chunks)
    let end = bytes.length
    for (;;) {
      const newline = end === 0 ? -1 : bytes.lastIndexOf(LF, end - 1)
      const start = newline + 1
      if (end - start >= DATA.length && bytes.compare(DATA, 0, DATA.length, start, start + DATA.length) === 0) {
        const line = bytes.toString("utf8", start, end)
        if (FINAL_EVENT.test(line)) return responseOf(line.slice(DATA.length))
      }
      if (newline === -1) return undefined
      end = newline
    }
  }
}

/** One answered turn: where it is stored, the request as the caller sent it, and its conversation. */
interface Turn {
  readonly state: ResponsesState
  readonly scope: ResponseScope
  readonly request: Readonly<Record<string, unknown>>
  readonly conversation: Pick<ResolvedRequest, "context" | "input">
  readonly log: RequestLogFields
}

/** The write's outcome on the request's log line (`responses_store`). */
const noted = (turn: Turn, put: Effect.Effect<boolean>): Effect.Effect<void> =>
  Effect.map(put, (ok) => {
    turn.log.responses_store = ok ? "stored" : "unstored"
  })

/** A streamed answer that stores its final Response object once its body ended well (the fast lane kept). */
const storedStream = (turn: Turn, body: ReplyStream): ReplyStream => {
  const { state, scope, request, conversation } = turn
  // The whole stream is a few times the stored entry (deltas, then the final object).
  const copy = new StreamCopy(state.section.max_entry_size_bytes * 4)
  const copied = tapChunks(body, (chunk) => copy.add(chunk))
  return onBodyExit(copied, (exit) => {
    if (Exit.isFailure(exit)) return Effect.void
    const response = copy.finalResponse()
    const entry = response === undefined ? undefined : storedResponseOf(request, conversation, response)
    return entry === undefined ? Effect.void : noted(turn, state.store.put(scope, entry))
  })
}

/** The answer, stored when it is a whole Response object; sent with `store: true` and its `previous_response_id`. */
const stored = (turn: Turn, answer: Answer): Effect.Effect<Answer> => {
  const { state, scope, request, conversation } = turn
  if (answer.status !== 200) return Effect.succeed(answer)
  if (!isValueBody(answer.body)) return Effect.succeed(reply(answer.status, answer.headers, storedStream(turn, answer.body), answer.events))
  let response: Record<string, unknown>
  try {
    response = JSON.parse(typeof answer.body === "string" ? answer.body : Buffer.from(answer.body).toString("utf8"))
  } catch {
    return Effect.succeed(answer)
  }
  const entry = storedResponseOf(request, conversation, response)
  if (entry === undefined) return Effect.succeed(answer)
  response.store = true
  response.previous_response_id = entry.previousResponseId
  return Effect.as(noted(turn, state.store.put(scope, entry)), reply(answer.status, answer.headers, JSON.stringify(response), answer.events))
}

/** Fields of state that only a native Responses provider can take (src/routing/servable.ts refuses them elsewhere). */
const isStateRefusal = (error: AnyGatewayFailure): boolean =>
  error instanceof GatewayError && error.code === "unsupported_for_model" && (error.param === "previous_response_id" || error.param === "input[].item_reference")

/** `run` with the Responses state around it (for a request in the Responses API's shape). */
export const withResponsesState = (
  state: ResponsesState,
  run: (input: ChatInput) => Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope>
) =>
(input: ChatInput): Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope> => {
  const scope = responseScopeOf(state, input)
  return Effect.flatMap(resolved(state, scope, input), (ready) => {
    // Ids the store never saw go as they are: to a native provider that may know them; elsewhere the 400 of an unknown id.
    const { providerOwn } = ready
    if (providerOwn !== undefined) return Effect.catchIf(run(ready.input), isStateRefusal, () => Effect.fail(providerOwn))
    if (input.json.store === false) return run(ready.input)
    const previous = input.json.previous_response_id
    const answered = run({ ...ready.input, stored: { previousResponseId: typeof previous === "string" && previous !== "" ? previous : null } })
    return Effect.flatMap(answered, (answer) => stored({ state, scope, request: input.json, conversation: ready.conversation, log: input.ctx.log }, answer))
  })
}
