/**
 * Messages request → canonical `ChatRequest` (anthropic-messages.md §2).
 *
 * - `system` (string or text blocks) becomes `system` parts.
 * - `tool_use` input becomes `tool_call` arguments via `JSON.stringify`.
 * - A plain-text `document` becomes a text part (translation.md §3).
 * - Content the canonical model cannot hold (`thinking`/`redacted_thinking`
 *   blocks, server-tool blocks and tools, `cache_control`, file sources) is left
 *   out and noted in `unmapped` under a `messages[]…`/`system[]…`/`tools[]…`
 *   key, so encoders report it as dropped.
 * - Top-level fields without a canonical home (`thinking`, `service_tier`,
 *   `output_config`, …) go to `unmapped` under their wire names.
 * - `includeUsage` is always true: an Anthropic stream always carries usage.
 */
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
import type { DecodeResult } from "../index.ts"
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

type Note = (key: string) => void

/** Validates a Messages body and converts it to the canonical request. */
export const decodeAnthropicRequest = (body: unknown): DecodeResult<ChatRequest> => {
  const decoded = decodeRequestBody(body)
  if (!decoded.ok) return decoded
  const wire = decoded.value
  const unmapped: Record<string, unknown> = {}
  const raw = body as Record<string, unknown>
  for (const key of Object.keys(raw)) {
    if (!MAPPED_FIELDS.has(key) && raw[key] !== null && raw[key] !== undefined) unmapped[key] = raw[key]
  }
  const note: Note = (key) => {
    unmapped[key] = ((unmapped[key] as number | undefined) ?? 0) + 1
  }
  const messages: Array<Message> = wire.messages.map((message) => ({
    role: message.role,
    content: convertContent(message.content, note)
  }))
  const choice = wire.tool_choice ?? undefined
  return {
    ok: true,
    value: {
      model: wire.model,
      system: convertSystem(wire.system, note),
      messages,
      maxTokens: wire.max_tokens,
      temperature: wire.temperature ?? undefined,
      topP: wire.top_p ?? undefined,
      topK: wire.top_k ?? undefined,
      stop: wire.stop_sequences ?? undefined,
      stream: wire.stream === true,
      includeUsage: true,
      tools: wire.tools == null ? undefined : convertTools(wire.tools, note),
      toolChoice: choice === undefined ? undefined : convertToolChoice(choice),
      parallelToolCalls: choice?.disable_parallel_tool_use === true ? false : undefined,
      user: wire.metadata?.user_id ?? undefined,
      unmapped
    }
  }
}

const convertSystem = (system: MessagesRequest["system"], note: Note): Array<TextPart> => {
  if (system == null) return []
  if (typeof system === "string") return [{ type: "text", text: system }]
  return system.map((block) => {
    if (block.cache_control != null) note("system[].cache_control")
    return { type: "text", text: block.text }
  })
}

const convertContent = (content: string | ReadonlyArray<WireBlock>, note: Note): Array<ContentPart> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  const parts: Array<ContentPart> = []
  for (const block of content) {
    if (isOtherBlock(block)) {
      note(`messages[].${block.type}`)
      continue
    }
    if (block.cache_control != null) note("messages[].cache_control")
    switch (block.type) {
      case "text":
        parts.push({ type: "text", text: block.text })
        break
      case "image": {
        const image = convertImage(block, note)
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
          note(`messages[].document.${source.type}`)
        }
        break
      }
      case "tool_use":
        parts.push({ type: "tool_call", id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) })
        break
      case "tool_result":
        parts.push(convertToolResult(block, note))
        break
    }
  }
  return parts
}

const base64 = (source: { readonly media_type: string; readonly data: string }): MediaSource => ({
  kind: "base64",
  mediaType: source.media_type,
  data: source.data
})

const convertImage = (block: WireImageBlock, note: Note): ImagePart | undefined => {
  const source = block.source
  if (source.type === "base64") return { type: "image", source: base64(source) }
  if (source.type === "url") return { type: "image", source: { kind: "url", url: source.url } }
  note("messages[].image.file")
  return undefined
}

const convertToolResult = (block: WireToolResultBlock, note: Note): ContentPart => {
  const content: Array<TextPart | ImagePart> = []
  if (typeof block.content === "string") {
    content.push({ type: "text", text: block.content })
  } else if (block.content !== undefined) {
    for (const inner of block.content) {
      if (isOtherBlock(inner)) note(`messages[].tool_result.${inner.type}`)
      else if (inner.type === "text") content.push({ type: "text", text: inner.text })
      else {
        const image = convertImage(inner, note)
        if (image !== undefined) content.push(image)
      }
    }
  }
  return { type: "tool_result", toolCallId: block.tool_use_id, content, isError: block.is_error ?? undefined }
}

const convertTools = (wire: NonNullable<MessagesRequest["tools"]>, note: Note): Array<ToolDefinition> => {
  const tools: Array<ToolDefinition> = []
  for (const tool of wire) {
    if (isServerTool(tool)) {
      note(`tools[].${tool.type}`)
      continue
    }
    if (tool.cache_control != null) note("tools[].cache_control")
    tools.push({
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
