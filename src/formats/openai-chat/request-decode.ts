/**
 * Chat Completions request → canonical `ChatRequest` (docs/reference/translation.md §2, §4).
 *
 * - `system`/`developer` messages, wherever they sit, become `system` parts in order.
 * - `tool` messages become `tool_result` parts of a user message; consecutive tool
 *   messages and the user message right after them share one user message,
 *   tool results first.
 * - Content the canonical model cannot hold (`input_audio`, `file_id`, custom
 *   tools, message `name`s…) is left out and noted in `unmapped` under a
 *   `messages[]…`/`tools[]…` key, so encoders report it as dropped.
 * - Top-level fields without a canonical home go to `unmapped` under their wire
 *   names; `null` values and `n: 1` mean "the default" and are not kept.
 */
import { Result } from "effect"
import type {
  ChatRequest,
  ContentPart,
  DocumentPart,
  ImagePart,
  MediaSource,
  Message,
  ResponseFormat,
  TextPart,
  ToolChoice,
  ToolDefinition
} from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { contentNotes } from "../notes.ts"
import type { Note } from "../notes.ts"
import {
  type ChatCompletionRequest,
  decodeRequestBody,
  MAPPED_FIELDS,
  type WireMessage,
  type WireTool,
  type WireToolChoice,
  type WireUserPart
} from "./request-schema.ts"

/** Validates a Chat Completions body and converts it to the canonical request. */
export const decodeOpenAiChatRequest = (body: unknown): Result.Result<ChatRequest, DecodeFailure> => {
  const decoded = decodeRequestBody(body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const wire = decoded.success
  const raw = body as Record<string, unknown>
  const unmapped = unmappedFields(raw)
  const { note, lose, untranslatable } = contentNotes(unmapped)
  for (const field of LOST_FIELDS) if (field in unmapped) lose(field)
  if (Array.isArray(raw.modalities) && raw.modalities.includes("audio")) lose("modalities")
  const { system, messages } = convertMessages(wire.messages, note, lose)
  const allowed = allowedToolNames(wire.tool_choice)
  const tools = wire.tools == null ? undefined : convertTools(wire.tools, allowed, lose)
  const toolChoice = convertToolChoice(wire.tool_choice)
  if (toolChoice === "unmapped") unmapped.tool_choice = (body as Record<string, unknown>).tool_choice
  const user = wire.user ?? wire.safety_identifier ?? undefined
  if (wire.user != null && wire.safety_identifier != null) unmapped.safety_identifier = wire.safety_identifier
  return Result.succeed({
    model: wire.model,
    system,
    messages,
    maxTokens: wire.max_completion_tokens ?? wire.max_tokens ?? undefined,
    temperature: wire.temperature ?? undefined,
    topP: wire.top_p ?? undefined,
    stop: wire.stop == null ? undefined : typeof wire.stop === "string" ? [wire.stop] : wire.stop,
    stream: wire.stream === true,
    includeUsage: wire.stream_options?.include_usage === true,
    tools,
    toolChoice: toolChoice === "unmapped" ? undefined : toolChoice,
    parallelToolCalls: wire.parallel_tool_calls ?? undefined,
    responseFormat: convertResponseFormat(wire.response_format),
    user,
    reasoningEffort: wire.reasoning_effort ?? undefined,
    unmapped,
    untranslatable
  })
}

const unmappedFields = (raw: Record<string, unknown>): Record<string, unknown> => {
  const unmapped: Record<string, unknown> = {}
  for (const key of Object.keys(raw)) {
    const value = raw[key]
    if (MAPPED_FIELDS.has(key) || value === null || value === undefined) continue
    if (key === "n" && value === 1) continue
    unmapped[key] = value
  }
  return unmapped
}

/**
 * Fields whose loss changes the answer: audio output, several choices, hosted
 * web search. Another family cannot serve a request that uses them.
 */
const LOST_FIELDS = ["n", "audio", "web_search_options"] as const

const convertMessages = (
  wire: ReadonlyArray<WireMessage>,
  note: Note,
  lose: Note
): { system: Array<TextPart>; messages: Array<Message> } => {
  const system: Array<TextPart> = []
  const messages: Array<Message> = []
  // Content of the user message opened by a run of tool messages, still accepting parts.
  let toolTurn: Array<ContentPart> | undefined
  for (const message of wire) {
    switch (message.role) {
      case "system":
      case "developer":
        system.push(...textParts(message.content))
        if (message.name !== undefined) note("messages[].name")
        continue
      case "function":
        note("messages[].function")
        continue
      case "tool": {
        const result: ContentPart = {
          type: "tool_result",
          toolCallId: message.tool_call_id,
          content: textParts(message.content)
        }
        if (toolTurn === undefined) {
          toolTurn = [result]
          messages.push({ role: "user", content: toolTurn })
        } else {
          toolTurn.push(result)
        }
        continue
      }
      case "user": {
        const parts = userParts(message.content, note, lose)
        if (message.name !== undefined) note("messages[].name")
        if (toolTurn === undefined) messages.push({ role: "user", content: parts })
        else toolTurn.push(...parts)
        break
      }
      case "assistant":
        messages.push({ role: "assistant", content: assistantParts(message, note) })
        break
    }
    toolTurn = undefined
  }
  return { system, messages }
}

const textParts = (content: string | ReadonlyArray<{ readonly text: string }>): Array<TextPart> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : content.map((part) => ({ type: "text", text: part.text }))

const userParts = (content: string | ReadonlyArray<WireUserPart>, note: Note, lose: Note): Array<ContentPart> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  const parts: Array<ContentPart> = []
  for (const part of content) {
    switch (part.type) {
      case "text":
        parts.push({ type: "text", text: part.text })
        break
      case "image_url":
        parts.push(imageOrDocument(part.image_url.url))
        if (part.image_url.detail !== undefined) note("messages[].image_url.detail")
        break
      case "input_audio":
        lose("messages[].input_audio")
        break
      case "file":
        if (part.file.file_data !== undefined) {
          parts.push({ type: "document", source: fileSource(part.file.file_data), title: part.file.filename })
        } else {
          lose("messages[].file.file_id")
        }
        break
    }
  }
  return parts
}

const assistantParts = (message: Extract<WireMessage, { role: "assistant" }>, note: Note): Array<ContentPart> => {
  const parts: Array<ContentPart> = []
  const content = message.content
  if (typeof content === "string") {
    parts.push({ type: "text", text: content })
  } else if (content != null) {
    for (const part of content) {
      parts.push({ type: "text", text: part.type === "text" ? part.text : part.refusal })
    }
  }
  if (message.refusal != null && message.refusal !== "") parts.push({ type: "text", text: message.refusal })
  for (const call of message.tool_calls ?? []) {
    if (call.type === "custom") {
      note("messages[].tool_calls.custom")
      continue
    }
    parts.push({ type: "tool_call", id: call.id, name: call.function.name, arguments: call.function.arguments })
  }
  if (message.name !== undefined) note("messages[].name")
  if (message.audio != null) note("messages[].audio")
  if (message.function_call != null) note("messages[].function_call")
  return parts
}

/** `data:<mime>;base64,<data>` → inline bytes; anything else is a URL the provider fetches. */
export const mediaSourceOfUrl = (url: string): MediaSource => {
  if (url.startsWith("data:")) {
    const comma = url.indexOf(",")
    const header = comma < 0 ? "" : url.slice(5, comma)
    if (header.endsWith(";base64")) {
      return { kind: "base64", mediaType: header.slice(0, header.indexOf(";")), data: url.slice(comma + 1) }
    }
  }
  return { kind: "url", url }
}

// A PDF sent as an image_url data URL is a document (Portkey does the same, docs/reference/translation.md §7).
const imageOrDocument = (url: string): ImagePart | DocumentPart => {
  const source = mediaSourceOfUrl(url)
  return source.kind === "base64" && !source.mediaType.startsWith("image/")
    ? { type: "document", source }
    : { type: "image", source }
}

// `file_data` is a data URL; some clients send bare base64, which is taken as a PDF.
export const fileSource = (fileData: string): MediaSource => {
  const source = mediaSourceOfUrl(fileData)
  return source.kind === "url" ? { kind: "base64", mediaType: "application/pdf", data: fileData } : source
}

const allowedToolNames = (choice: WireToolChoice | null | undefined): ReadonlySet<string> | undefined => {
  if (typeof choice !== "object" || choice === null || choice.type !== "allowed_tools") return undefined
  return new Set(choice.allowed_tools.tools.flatMap((tool) => (tool.function ? [tool.function.name] : [])))
}

const convertTools = (
  wire: ReadonlyArray<WireTool>,
  allowed: ReadonlySet<string> | undefined,
  lose: Note
): Array<ToolDefinition> => {
  const tools: Array<ToolDefinition> = []
  for (const tool of wire) {
    if (tool.type === "custom") {
      lose("tools[].custom")
      continue
    }
    const fn = tool.function
    if (allowed !== undefined && !allowed.has(fn.name)) continue
    tools.push(functionTool(fn))
  }
  return tools
}

/** An OpenAI function definition (nested in Chat Completions, flat in the Responses API) as canonical. */
export const functionTool = (fn: {
  readonly name: string
  readonly description?: string | null | undefined
  readonly parameters?: Readonly<Record<string, unknown>> | null | undefined
  readonly strict?: boolean | null | undefined
}): ToolDefinition => ({
  name: fn.name,
  description: fn.description ?? undefined,
  parameters: fn.parameters ?? {},
  strict: fn.strict ?? undefined
})

/** `"unmapped"`: a custom-tool choice, kept verbatim in `unmapped.tool_choice`. */
const convertToolChoice = (choice: WireToolChoice | null | undefined): ToolChoice | "unmapped" | undefined => {
  if (choice == null) return undefined
  if (typeof choice === "string") return { type: choice }
  switch (choice.type) {
    case "function":
      return { type: "tool", name: choice.function.name }
    case "allowed_tools":
      return { type: choice.allowed_tools.mode }
    case "custom":
      return "unmapped"
  }
}

const convertResponseFormat = (
  format: ChatCompletionRequest["response_format"]
): ResponseFormat | undefined => {
  if (format == null) return undefined
  if (format.type !== "json_schema") return { type: format.type }
  const spec = format.json_schema
  return {
    type: "json_schema",
    name: spec.name,
    schema: spec.schema ?? {},
    strict: spec.strict ?? undefined,
    description: spec.description ?? undefined
  }
}
