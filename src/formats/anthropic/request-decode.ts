/**
 * Messages request → canonical `ChatRequest` (docs/reference/anthropic-messages.md §2).
 *
 * - `system` (string or text blocks) becomes `system` parts, followed by the
 *   text of `role: "system"` messages in order (wherever they sit: the
 *   canonical model, like the 2023-06-01 API, has one system prompt); their
 *   other blocks are left out and noted.
 * - `tool_use` input becomes `tool_call` arguments via `JSON.stringify`.
 * - A plain-text `document` becomes a text part (docs/reference/translation.md §3).
 * - Content the canonical model cannot hold (`thinking`/`redacted_thinking`
 *   blocks, server-tool blocks and tools, `cache_control`, file sources) is left
 *   out and noted in `unmapped` under a `messages[]…`/`system[]…`/`tools[]…`
 *   key, so encoders report it as dropped.
 * - Top-level fields without a canonical home (`thinking`, `service_tier`,
 *   `output_config`, …) go to `unmapped` under their wire names.
 * - `includeUsage` is always true: an Anthropic stream always carries usage.
 */
import { Result } from "effect"
import type {
  ChatRequest,
  ContentPart,
  ImagePart,
  MediaSource,
  Message,
  TextPart,
  ToolChoice,
  ToolDefinition
} from "../../domain/chat.ts"
import type { DecodeFailure } from "../contract.ts"
import { contentNotes } from "../notes.ts"
import type { Note } from "../notes.ts"
import { isRecord } from "./mapping.ts"
import {
  decodeRequestBody,
  isOtherBlock,
  isServerTool,
  MAPPED_FIELDS,
  type MessagesRequest,
  type WireBlock,
  type WireImageBlock,
  type WireToolResultBlock
} from "./request-schema.ts"

/** Server-side features another family has no counterpart for. */
const LOST_FIELDS = ["container", "mcp_servers"] as const

/**
 * Whether a JSON schema meets OpenAI's strict mode (every object closed with
 * `additionalProperties: false` and every property required), so a translated
 * structured output keeps Anthropic's guarantee where it can.
 */
const isStrictSchema = (schema: unknown): boolean => {
  if (Array.isArray(schema)) return schema.every(isStrictSchema)
  if (!isRecord(schema)) return true
  if (schema.type === "object" || isRecord(schema.properties)) {
    const properties = isRecord(schema.properties) ? Object.keys(schema.properties) : []
    const required = Array.isArray(schema.required) ? schema.required : []
    if (schema.additionalProperties !== false || properties.some((name) => !required.includes(name))) return false
  }
  return Object.values(schema).every(isStrictSchema)
}

/** Validates a Messages body and converts it to the canonical request. */
export const decodeAnthropicRequest = (body: unknown): Result.Result<ChatRequest, DecodeFailure> => {
  const decoded = decodeRequestBody(body)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const wire = decoded.success
  const unmapped: Record<string, unknown> = {}
  const raw = body as Record<string, unknown>
  for (const key of Object.keys(raw)) {
    if (!MAPPED_FIELDS.has(key) && raw[key] !== null && raw[key] !== undefined) unmapped[key] = raw[key]
  }
  const { note, lose, untranslatable } = contentNotes(unmapped)
  for (const field of LOST_FIELDS) if (field in unmapped) lose(field)
  const output = raw.output_config
  if (isRecord(output)) {
    for (const key of Object.keys(output)) if (key !== "format" && key !== "effort" && output[key] != null) unmapped[`output_config.${key}`] = output[key]
  }
  const system = convertSystem(wire.system, note)
  const messages: Array<Message> = []
  for (const message of wire.messages) {
    const content = convertContent(message.content, note, lose)
    if (message.role !== "system") messages.push({ role: message.role, content })
    else system.push(...systemText(content, note))
  }
  const format = wire.output_config?.format ?? undefined
  const choice = wire.tool_choice ?? undefined
  return Result.succeed({
    model: wire.model,
    system,
    messages,
    maxTokens: wire.max_tokens,
    temperature: wire.temperature ?? undefined,
    topP: wire.top_p ?? undefined,
    topK: wire.top_k ?? undefined,
    stop: wire.stop_sequences ?? undefined,
    stream: wire.stream === true,
    includeUsage: true,
    tools: wire.tools == null ? undefined : convertTools(wire.tools, note, lose),
    toolChoice: choice === undefined ? undefined : convertToolChoice(choice),
    parallelToolCalls: choice?.disable_parallel_tool_use === true ? false : undefined,
    user: wire.metadata?.user_id ?? undefined,
    responseFormat: format === undefined
      ? undefined
      : { type: "json_schema", name: "output", schema: format.schema, strict: isStrictSchema(format.schema) ? true : undefined },
    reasoningEffort: wire.output_config?.effort ?? undefined,
    unmapped,
    untranslatable
  })
}

const convertSystem = (system: MessagesRequest["system"], note: Note): Array<TextPart> => {
  if (system == null) return []
  if (typeof system === "string") return [{ type: "text", text: system }]
  return system.map((block) => {
    if (block.cache_control == null) return { type: "text", text: block.text }
    note("system[].cache_control")
    return { type: "text", text: block.text, cachePoint: true }
  })
}

/** The text of a `role: "system"` message; a system prompt holds text only. */
const systemText = (content: ReadonlyArray<ContentPart>, note: Note): Array<TextPart> => {
  const text: Array<TextPart> = []
  for (const part of content) {
    if (part.type === "text") text.push(part)
    else note(`messages[].system.${part.type}`)
  }
  return text
}

const convertContent = (content: string | ReadonlyArray<WireBlock>, note: Note, lose: Note): Array<ContentPart> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  const parts: Array<ContentPart> = []
  for (const block of content) {
    if (isOtherBlock(block)) {
      note(`messages[].${block.type}`)
      continue
    }
    if (block.cache_control != null) note("messages[].cache_control")
    const before = parts.length
    switch (block.type) {
      case "text":
        parts.push({ type: "text", text: block.text })
        break
      case "image": {
        const image = convertImage(block, lose)
        if (image !== undefined) parts.push(image)
        break
      }
      case "document": {
        const source = block.source
        if (source.type === "base64") {
          parts.push({ type: "document", source: base64(source), title: block.title ?? undefined })
        } else if (source.type === "url") {
          parts.push({ type: "document", source: { kind: "url", url: source.url }, title: block.title ?? undefined })
        } else if (source.type === "text") {
          parts.push({ type: "text", text: source.data })
        } else {
          lose(`messages[].document.${source.type}`)
        }
        break
      }
      case "tool_use":
        parts.push({ type: "tool_call", id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) })
        break
      case "tool_result":
        parts.push(convertToolResult(block, note, lose))
        break
    }
    // The block's part carries its cache breakpoint (for families with markers of their own).
    if (block.cache_control != null && parts.length > before) parts[parts.length - 1] = { ...parts[parts.length - 1], cachePoint: true }
  }
  return parts
}

const base64 = (source: { readonly media_type: string; readonly data: string }): MediaSource => ({
  kind: "base64",
  mediaType: source.media_type,
  data: source.data
})

const convertImage = (block: WireImageBlock, lose: Note): ImagePart | undefined => {
  const source = block.source
  if (source.type === "base64") return { type: "image", source: base64(source) }
  if (source.type === "url") return { type: "image", source: { kind: "url", url: source.url } }
  lose("messages[].image.file")
  return undefined
}

const convertToolResult = (block: WireToolResultBlock, note: Note, lose: Note): ContentPart => {
  const content: Array<TextPart | ImagePart> = []
  if (typeof block.content === "string") {
    content.push({ type: "text", text: block.content })
  } else if (block.content !== undefined) {
    for (const inner of block.content) {
      if (isOtherBlock(inner)) note(`messages[].tool_result.${inner.type}`)
      else if (inner.type === "text") content.push({ type: "text", text: inner.text })
      else {
        const image = convertImage(inner, lose)
        if (image !== undefined) content.push(image)
      }
    }
  }
  return { type: "tool_result", toolCallId: block.tool_use_id, content, isError: block.is_error ?? undefined }
}

const convertTools = (wire: NonNullable<MessagesRequest["tools"]>, note: Note, lose: Note): Array<ToolDefinition> => {
  const tools: Array<ToolDefinition> = []
  for (const tool of wire) {
    if (isServerTool(tool)) {
      lose(`tools[].${tool.type}`)
      continue
    }
    if (tool.cache_control != null) note("tools[].cache_control")
    tools.push({
      ...(tool.cache_control != null ? { cachePoint: true as const } : {}),
      name: tool.name,
      description: tool.description ?? undefined,
      parameters: tool.input_schema,
      strict: tool.strict ?? undefined
    })
  }
  return tools
}

const convertToolChoice = (choice: NonNullable<MessagesRequest["tool_choice"]>): ToolChoice => {
  switch (choice.type) {
    case "any":
      return { type: "required" }
    case "tool":
      return { type: "tool", name: choice.name }
    case "auto":
    case "none":
      return { type: choice.type }
  }
}
