/**
 * Responses request (`POST /v1/responses`) → canonical `ChatRequest`
 * (docs/reference/openai-other.md §7.1).
 *
 * - `instructions` is the first `system` part; `system`/`developer` message
 *   items, wherever they sit, follow in order.
 * - The Responses API splits one assistant turn into several items (a message,
 *   then one `function_call` item per call). Consecutive assistant messages and
 *   `function_call` items become one assistant message; consecutive
 *   `function_call_output` items become `tool_result` parts of one user
 *   message, and the user message right after them joins it, results first.
 * - `reasoning.effort` becomes `reasoningEffort`; other `reasoning` keys stay unmapped.
 * - A `reasoning` item the gateway made from Anthropic thinking (its
 *   `encrypted_content` is the thinking's signature, or redacted thinking's
 *   data behind a `redacted_thinking:` prefix) becomes a reasoning part of the
 *   assistant turn, its summary the text, so an Anthropic upstream gets the
 *   signed or redacted thinking block back. OpenAI's own encrypted reasoning
 *   (a Fernet token, `gAAAAA…`) only OpenAI can read: like a reasoning item
 *   without `encrypted_content`, it is left out.
 * - Content whose loss is harmless (such reasoning items, image `detail`) is
 *   left out and noted in `unmapped` under an `input[]…` key, so encoders
 *   report it as dropped.
 * - What only the provider's own Responses API can honour (server-side state:
 *   `previous_response_id`, `conversation`, stored `prompt`s, `background`;
 *   `item_reference` items and `file_id` references; built-in tools such as
 *   `web_search` and a choice of one) is listed in `untranslatable`: such a
 *   request is never translated to another family.
 * - Other top-level fields without a canonical home (`store`, `include`,
 *   `metadata`, `truncation`, …) go to `unmapped` under their wire names;
 *   `null` and values that only restate what the gateway does anyway
 *   (`store: false`, `background: false`, `truncation: "disabled"`) are not kept.
 */
import { Result } from "effect"
import type {
  ChatRequest,
  ContentPart,
  DocumentPart,
  ImagePart,
  Message,
  ReasoningPart,
  ResponseFormat,
  TextPart,
  ToolChoice,
  ToolDefinition
} from "../../domain/chat.ts"
import { REASONING_EFFORTS } from "../../domain/chat.ts"
import type { ReasoningEffort } from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { contentNotes } from "../notes.ts"
import type { Note } from "../notes.ts"
import { isRecord } from "../openai-chat/mapping.ts"
import { fileSource, functionTool, mediaSourceOfUrl } from "../openai-chat/request-decode.ts"
import { reasoningPartOf } from "./mapping.ts"
import {
  decodeRequestBody,
  isOtherItem,
  MAPPED_FIELDS,
  type WireContentPart,
  type WireInputItem,
  type WireMessageItem,
  type WireOutputPart,
  type WireReasoningItem,
  type WireTextFormat,
  type WireTool,
  type WireToolChoice
} from "./request-schema.ts"

/** Validates a Responses body and converts it to the canonical request. */
export const decodeResponsesRequest = (body: unknown): Result.Result<ChatRequest, DecodeFailure> => {
  const decoded = decodeRequestBody(body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const wire = decoded.success
  const raw = body as Record<string, unknown>
  const unmapped = unmappedFields(raw)
  const { note, lose, untranslatable } = contentNotes(unmapped)
  for (const field of LOST_FIELDS) if (field in unmapped) lose(field)
  const reasoning = raw.reasoning
  let reasoningEffort: ReasoningEffort | undefined
  if (isRecord(reasoning)) {
    delete unmapped.reasoning
    for (const key of Object.keys(reasoning)) {
      const value = reasoning[key]
      if (key === "effort" && typeof value === "string" && (REASONING_EFFORTS as ReadonlyArray<string>).includes(value)) reasoningEffort = value as ReasoningEffort
      else if (value != null) unmapped[`reasoning.${key}`] = value
    }
  }
  const system: Array<TextPart> = wire.instructions == null ? [] : [{ type: "text", text: wire.instructions }]
  const messages = typeof wire.input === "string"
    ? [{ role: "user" as const, content: [{ type: "text" as const, text: wire.input }] }]
    : convertItems(wire.input, system, note, lose)
  const allowed = allowedToolNames(wire.tool_choice)
  const tools = wire.tools == null ? undefined : convertTools(wire.tools, allowed, lose)
  const toolChoice = convertToolChoice(wire.tool_choice)
  if (toolChoice === "unmapped") lose("tool_choice")
  const user = wire.user ?? wire.safety_identifier ?? undefined
  if (wire.user != null && wire.safety_identifier != null) unmapped.safety_identifier = wire.safety_identifier
  const text = raw.text as Record<string, unknown> | null | undefined
  if (text != null && text.verbosity != null) unmapped["text.verbosity"] = text.verbosity
  return Result.succeed({
    model: wire.model,
    system,
    messages,
    maxTokens: wire.max_output_tokens ?? undefined,
    temperature: wire.temperature ?? undefined,
    topP: wire.top_p ?? undefined,
    stream: wire.stream === true,
    // Responses always reports usage, in `response.completed`.
    includeUsage: true,
    tools,
    toolChoice: toolChoice === "unmapped" ? undefined : toolChoice,
    parallelToolCalls: wire.parallel_tool_calls ?? undefined,
    responseFormat: convertTextFormat(wire.text?.format),
    user,
    reasoningEffort,
    unmapped,
    untranslatable
  })
}

/** Values that only restate what the gateway does anyway: not reported as dropped. */
const DEFAULTS: Readonly<Record<string, unknown>> = { store: false, background: false, truncation: "disabled" }

const unmappedFields = (raw: Record<string, unknown>): Record<string, unknown> => {
  const unmapped: Record<string, unknown> = {}
  for (const key of Object.keys(raw)) {
    const value = raw[key]
    if (MAPPED_FIELDS.has(key) || value === null || value === undefined || DEFAULTS[key] === value) continue
    unmapped[key] = value
  }
  return unmapped
}

/**
 * Fields that need the provider's own server-side state or features: without
 * them the answer means something else, so only the provider's own Responses
 * API may serve the request.
 */
const LOST_FIELDS = ["previous_response_id", "conversation", "prompt", "background"] as const

const convertItems = (items: ReadonlyArray<WireInputItem>, system: Array<TextPart>, note: Note, lose: Note): Array<Message> => {
  const messages: Array<Message> = []
  // The open assistant turn (messages and function calls) and the open tool
  // turn (function outputs), still accepting parts.
  let assistantTurn: Array<ContentPart> | undefined
  let toolTurn: Array<ContentPart> | undefined
  for (const item of items) {
    if (isOtherItem(item)) {
      // A stored item referenced by id cannot be resolved elsewhere; reasoning items only replay hidden state.
      if (item.type === "item_reference") lose("input[].item_reference")
      else note(`input[].${item.type}`)
      continue
    }
    switch (item.type) {
      case "function_call":
        if (assistantTurn === undefined) {
          assistantTurn = []
          messages.push({ role: "assistant", content: assistantTurn })
        }
        assistantTurn.push({ type: "tool_call", id: item.call_id, name: item.name, arguments: item.arguments })
        toolTurn = undefined
        continue
      case "function_call_output":
        if (toolTurn === undefined) {
          toolTurn = []
          messages.push({ role: "user", content: toolTurn })
        }
        toolTurn.push({ type: "tool_result", toolCallId: item.call_id, content: outputParts(item.output, note, lose) })
        assistantTurn = undefined
        continue
      case "reasoning": {
        const part = reasoningPart(item)
        if (part === undefined) {
          note("input[].reasoning")
          continue
        }
        if (assistantTurn === undefined) {
          assistantTurn = []
          messages.push({ role: "assistant", content: assistantTurn })
        }
        assistantTurn.push(part)
        toolTurn = undefined
        continue
      }
    }
    const message = item as WireMessageItem
    switch (message.role) {
      case "system":
      case "developer":
        system.push(...instructionParts(message.content, message.role, note))
        continue
      case "assistant":
        if (assistantTurn === undefined) {
          assistantTurn = []
          messages.push({ role: "assistant", content: assistantTurn })
        }
        assistantTurn.push(...assistantParts(message.content, note))
        toolTurn = undefined
        continue
      case "user": {
        const parts = userParts(message.content, note, lose)
        if (toolTurn === undefined) messages.push({ role: "user", content: parts })
        else toolTurn.push(...parts)
        assistantTurn = undefined
        toolTurn = undefined
      }
    }
  }
  return messages
}

const reasoningPart = (item: WireReasoningItem): ReasoningPart | undefined =>
  reasoningPartOf((item.summary ?? []).map((part) => part.text).join(""), item.encrypted_content)

const instructionParts = (
  content: WireMessageItem["content"],
  role: string,
  note: Note
): Array<TextPart> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  const parts: Array<TextPart> = []
  for (const part of content) {
    if (part.type === "input_text" || part.type === "output_text") parts.push({ type: "text", text: part.text })
    else note(`input[].${role}.${part.type}`)
  }
  return parts
}

// Earlier output sent back verbatim: `output_text` and `refusal` parts.
const assistantParts = (content: WireMessageItem["content"], note: Note): Array<ContentPart> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  const parts: Array<ContentPart> = []
  for (const part of content) {
    if (part.type === "input_text" || part.type === "output_text") parts.push({ type: "text", text: part.text })
    else if (part.type === "refusal") parts.push({ type: "text", text: part.refusal })
    else note(`input[].assistant.${part.type}`)
  }
  return parts
}

const userParts = (content: WireMessageItem["content"], note: Note, lose: Note): Array<ContentPart> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  const parts: Array<ContentPart> = []
  for (const part of content) {
    const converted = mediaPart(part, note, lose)
    if (converted !== undefined) parts.push(converted)
  }
  return parts
}

const outputParts = (output: string | ReadonlyArray<WireOutputPart>, note: Note, lose: Note): Array<TextPart | ImagePart> => {
  if (typeof output === "string") return [{ type: "text", text: output }]
  const parts: Array<TextPart | ImagePart> = []
  for (const part of output) {
    const converted = mediaPart(part, note, lose)
    if (converted?.type === "document") note("input[].function_call_output.input_file")
    else if (converted !== undefined) parts.push(converted)
  }
  return parts
}

/** A user-side part; undefined (and a loss) when it only references a stored file. */
const mediaPart = (part: WireContentPart, note: Note, lose: Note): TextPart | ImagePart | DocumentPart | undefined => {
  switch (part.type) {
    case "input_text":
    case "output_text":
      return { type: "text", text: part.text }
    case "refusal":
      return { type: "text", text: part.refusal }
    case "input_image":
      // `detail: "auto"` is the default every provider applies; anything else is lost.
      if (part.detail != null && part.detail !== "auto") note("input[].input_image.detail")
      if (part.image_url != null) return { type: "image", source: mediaSourceOfUrl(part.image_url) }
      lose("input[].input_image.file_id")
      return undefined
    case "input_file":
      if (part.file_data != null) {
        return { type: "document", source: fileSource(part.file_data), title: part.filename ?? undefined }
      }
      if (part.file_url != null) {
        return { type: "document", source: { kind: "url", url: part.file_url }, title: part.filename ?? undefined }
      }
      lose("input[].input_file.file_id")
      return undefined
  }
}

const allowedToolNames = (choice: WireToolChoice | null | undefined): ReadonlySet<string> | undefined => {
  if (typeof choice !== "object" || choice === null || choice.type !== "allowed_tools") return undefined
  const tools = (choice as Extract<WireToolChoice, { type: "allowed_tools" }>).tools
  return new Set(tools.flatMap((tool) => (tool.type === "function" && tool.name !== undefined ? [tool.name] : [])))
}

const convertTools = (
  wire: ReadonlyArray<WireTool>,
  allowed: ReadonlySet<string> | undefined,
  lose: Note
): Array<ToolDefinition> => {
  const tools: Array<ToolDefinition> = []
  for (const tool of wire) {
    if (tool.type !== "function") {
      lose(`tools[].${tool.type}`)
      continue
    }
    const fn = tool as Extract<WireTool, { type: "function" }>
    if (allowed !== undefined && !allowed.has(fn.name)) continue
    tools.push(functionTool(fn))
  }
  return tools
}

/** `"unmapped"`: a choice of a built-in tool, kept verbatim in `unmapped.tool_choice`. */
const convertToolChoice = (choice: WireToolChoice | null | undefined): ToolChoice | "unmapped" | undefined => {
  if (choice == null) return undefined
  if (typeof choice === "string") return { type: choice }
  if (choice.type === "function") return { type: "tool", name: (choice as { readonly name: string }).name }
  if (choice.type === "allowed_tools") {
    return { type: (choice as Extract<WireToolChoice, { type: "allowed_tools" }>).mode }
  }
  return "unmapped"
}

const convertTextFormat = (format: WireTextFormat | null | undefined): ResponseFormat | undefined => {
  if (format == null) return undefined
  if (format.type !== "json_schema") return { type: format.type }
  return {
    type: "json_schema",
    name: format.name,
    schema: format.schema,
    strict: format.strict ?? undefined,
    description: format.description ?? undefined
  }
}
