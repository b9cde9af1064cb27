/**
 * Canonical `ChatResponse` → Responses `Response` object (docs/reference/openai-other.md §7.2),
 * and the pieces of it the stream encoder shares.
 *
 * The object is complete, as the API returns it: besides the output and usage
 * it echoes the request settings (`tools`, `tool_choice`, `temperature`, …)
 * the SDK types declare, taken from the canonical request when the caller
 * passes it and otherwise the API's defaults. `output_text` is not on the wire:
 * the SDKs compute it from the `message` items.
 *
 * Details:
 * - Consecutive text parts form one `message` item with one `output_text`
 *   part (empty text makes none), and refusal text a `refusal` part of it;
 *   each tool call is one `function_call` item and each reasoning part one
 *   `reasoning` item (its text as the summary, its signature as
 *   `encrypted_content`, so the caller can send it back; redacted thinking
 *   has no summary and its data, marked, as `encrypted_content`), in content order.
 * - `output_text` parts carry `logprobs: []`: the schema requires the field
 *   and no other family reports log probabilities here.
 * - `max_tokens` and `content_filter` stops give `status: "incomplete"` with
 *   `incomplete_details.reason`; the last output item, the one that was cut,
 *   is `incomplete` too. Every other stop is `completed`, and so is a refusal
 *   (see `outcomeOf`).
 * - `instructions` echoes the canonical `system` text (joined with blank
 *   lines), which also holds `system`/`developer` input messages;
 *   `reasoning.effort` echoes the request's.
 * - `store` is `false` and `previous_response_id` null (nothing is stored),
 *   unless the gateway's Responses store keeps the answer (`request.stored`):
 *   then `store: true` and the `previous_response_id` the caller sent.
 */
import type { ChatRequest, ChatResponse, ResponseFormat, ToolChoice, Usage } from "../../domain/chat.ts"
import {
  encodeUsage,
  encryptedContentOf,
  functionCallItemId,
  messageItemId,
  type Outcome,
  outcomeOf,
  reasoningItemId,
  responseId
} from "./mapping.ts"

export interface ResponsesEncodeOptions {
  /** Model name to show the caller instead of the upstream's. */
  readonly model?: string | undefined
  /** The caller's request, for the settings a Response object echoes. */
  readonly request?: ChatRequest | undefined
}

type ItemStatus = "in_progress" | "completed" | "incomplete"

export const messageItem = (
  id: string,
  content: ReadonlyArray<Record<string, unknown>>,
  status: ItemStatus
): Record<string, unknown> => ({ id, type: "message", status, role: "assistant", content })

export const outputTextPart = (text: string): Record<string, unknown> => ({
  type: "output_text",
  text,
  annotations: [],
  logprobs: []
})

export const refusalPart = (refusal: string): Record<string, unknown> => ({ type: "refusal", refusal })

/** A message content part of either kind. */
export const contentPart = (text: string, refusal: boolean): Record<string, unknown> =>
  refusal ? refusalPart(text) : outputTextPart(text)

/** A `reasoning` item; `summary` is empty when the thinking had no text (it was redacted or withheld). */
export const reasoningItem = (id: string, text: string, encryptedContent: string | null): Record<string, unknown> => ({
  id,
  type: "reasoning",
  summary: text === "" ? [] : [{ type: "summary_text", text }],
  encrypted_content: encryptedContent
})

export const functionCallItem = (
  id: string,
  callId: string,
  name: string,
  args: string,
  status: ItemStatus
): Record<string, unknown> => ({ type: "function_call", id, call_id: callId, name, arguments: args, status })

/** The request settings a Response object repeats; computed once per response or stream. */
export interface RequestEcho {
  readonly instructions: string | null
  readonly maxOutputTokens: number | null
  readonly parallelToolCalls: boolean
  readonly temperature: number
  readonly topP: number
  readonly text: Record<string, unknown>
  readonly toolChoice: unknown
  readonly tools: ReadonlyArray<unknown>
  readonly user: string | null
  readonly metadata: unknown
  readonly reasoning: { readonly effort: string | null; readonly summary: unknown }
  readonly store: boolean
  readonly previousResponseId: string | null
}

export const requestEcho = (request: ChatRequest | undefined): RequestEcho => {
  const metadata = request?.unmapped.metadata
  const summary = request?.unmapped["reasoning.summary"]
  return {
    instructions: request === undefined || request.system.length === 0
      ? null
      : request.system.map((part) => part.text).join("\n\n"),
    maxOutputTokens: request?.maxTokens ?? null,
    parallelToolCalls: request?.parallelToolCalls ?? true,
    temperature: request?.temperature ?? 1,
    topP: request?.topP ?? 1,
    text: { format: textFormat(request?.responseFormat) },
    toolChoice: toolChoice(request?.toolChoice),
    tools: (request?.tools ?? []).map((tool) => ({
      type: "function",
      name: tool.name,
      description: tool.description ?? null,
      parameters: tool.parameters,
      strict: tool.strict ?? null
    })),
    user: request?.user ?? null,
    metadata: typeof metadata === "object" && metadata !== null && !Array.isArray(metadata) ? metadata : {},
    reasoning: { effort: request?.reasoningEffort ?? null, summary: typeof summary === "string" ? summary : null },
    store: request?.stored !== undefined,
    previousResponseId: request?.stored?.previousResponseId ?? null
  }
}

const textFormat = (format: ResponseFormat | undefined): Record<string, unknown> => {
  if (format === undefined || format.type !== "json_schema") return { type: format?.type ?? "text" }
  const wire: Record<string, unknown> = { type: "json_schema", name: format.name, schema: format.schema }
  if (format.description !== undefined) wire.description = format.description
  wire.strict = format.strict ?? null
  return wire
}

const toolChoice = (choice: ToolChoice | undefined): unknown =>
  choice === undefined ? "auto" : choice.type === "tool" ? { type: "function", name: choice.name } : choice.type

/** Everything a Response object is made of, in canonical terms. */
export interface ResponseState {
  /** The upstream's id; shown as `resp_…`. */
  readonly id: string
  /** Unix seconds. */
  readonly createdAt: number
  readonly model: string
  readonly status: "in_progress" | Outcome["status"]
  readonly incompleteReason?: Outcome["incompleteReason"]
  readonly output: ReadonlyArray<unknown>
  readonly usage: Usage | undefined
}

/** A Response object, fields in the API's order. */
export const responseObject = (state: ResponseState, echo: RequestEcho): Record<string, unknown> => ({
  id: responseId(state.id),
  object: "response",
  created_at: state.createdAt,
  status: state.status,
  background: false,
  error: null,
  incomplete_details: state.incompleteReason === undefined ? null : { reason: state.incompleteReason },
  instructions: echo.instructions,
  max_output_tokens: echo.maxOutputTokens,
  model: state.model,
  output: state.output,
  parallel_tool_calls: echo.parallelToolCalls,
  previous_response_id: echo.previousResponseId,
  reasoning: echo.reasoning,
  store: echo.store,
  temperature: echo.temperature,
  text: echo.text,
  tool_choice: echo.toolChoice,
  tools: echo.tools,
  top_p: echo.topP,
  truncation: "disabled",
  usage: state.usage === undefined ? null : encodeUsage(state.usage),
  user: echo.user,
  metadata: echo.metadata
})

/** Canonical → Responses `Response` object (non-streamed). */
export const encodeResponsesResponse = (
  res: ChatResponse,
  options: ResponsesEncodeOptions = {}
): Record<string, unknown> => {
  const output: Array<Record<string, unknown>> = []
  // The open message item's parts: consecutive text of one kind (text or refusal) is one part.
  const parts: Array<{ text: string; refusal: boolean }> = []
  let refused = false
  const flushText = () => {
    if (parts.length === 0) return
    const content = parts.map((part) => contentPart(part.text, part.refusal))
    output.push(messageItem(messageItemId(res.id, output.length), content, "completed"))
    parts.length = 0
  }
  for (const part of res.content) {
    switch (part.type) {
      case "text": {
        if (part.text === "") continue
        const refusal = part.refusal === true
        refused ||= refusal
        const last = parts.at(-1)
        if (last?.refusal === refusal) last.text += part.text
        else parts.push({ text: part.text, refusal })
        continue
      }
      case "reasoning":
        flushText()
        output.push(reasoningItem(reasoningItemId(res.id, output.length), part.text, encryptedContentOf(part)))
        continue
      case "tool_call":
        flushText()
        output.push(
          functionCallItem(functionCallItemId(res.id, output.length), part.id, part.name, part.arguments, "completed")
        )
    }
  }
  flushText()
  const outcome = outcomeOf(res.stopReason, refused)
  if (outcome.status === "incomplete" && output.length > 0) output[output.length - 1].status = "incomplete"
  return responseObject(
    {
      id: res.id,
      createdAt: res.created,
      model: options.model ?? res.model,
      status: outcome.status,
      incompleteReason: outcome.incompleteReason,
      output,
      usage: res.usage
    },
    requestEcho(options.request)
  )
}
