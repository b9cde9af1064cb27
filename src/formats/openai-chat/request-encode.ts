/**
 * Canonical `ChatRequest` → Chat Completions body (docs/reference/translation.md §3, §4).
 *
 * - `system` parts become one leading `system` message, joined with a blank line.
 * - A user message's `tool_result` parts become one `tool` message each, in
 *   order, followed by a user message with the remaining parts (and any images
 *   the tool results held: a `tool` message carries text only). OpenAI has no
 *   error flag on tool results, so an error result's text is prefixed `Error: `.
 * - The output limit goes in `options.maxTokensField`: `max_completion_tokens`
 *   for OpenAI and Azure (reasoning models refuse `max_tokens`), `max_tokens`
 *   for other compatible servers. `user`, not `safety_identifier`, because
 *   generic servers understand it.
 * - Streaming requests always ask for `stream_options.include_usage`: the
 *   gateway needs usage and decides itself what the caller sees.
 * - `tool_choice` and `parallel_tool_calls` are sent only with tools: OpenAI
 *   rejects them otherwise.
 */
import type {
  ChatRequest,
  ContentPart,
  MediaSource,
  Message,
  ResponseFormat,
  ToolChoice,
  ToolDefinition
} from "../../domain/chat.ts"
import type { EncodedRequest, RequestEncodeOptions } from "../contract.ts"

/** OpenAI accepts at most four stop sequences. */
const MAX_STOP_SEQUENCES = 4

export const encodeOpenAiChatRequest = (req: ChatRequest, options: RequestEncodeOptions): EncodedRequest => {
  const sameFamily = options.callerFamily === "openai"
  const dropped: Array<string> = []
  const body: Record<string, unknown> = { model: options.model, messages: encodeMessages(req, dropped) }
  if (req.maxTokens !== undefined) body[options.maxTokensField ?? "max_tokens"] = req.maxTokens
  if (req.temperature !== undefined) body.temperature = req.temperature
  if (req.topP !== undefined) body.top_p = req.topP
  if (req.topK !== undefined) dropped.push("top_k")
  if (req.stop !== undefined && req.stop.length > 0) {
    if (!sameFamily && req.stop.length > MAX_STOP_SEQUENCES) dropped.push("stop_sequences")
    body.stop = sameFamily ? req.stop : req.stop.slice(0, MAX_STOP_SEQUENCES)
  }
  if (req.stream) {
    body.stream = true
    body.stream_options = { include_usage: true }
  }
  if (req.tools !== undefined && req.tools.length > 0) {
    body.tools = req.tools.map(encodeTool)
    if (req.toolChoice !== undefined) body.tool_choice = encodeToolChoice(req.toolChoice)
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls
  }
  if (req.responseFormat !== undefined) body.response_format = encodeResponseFormat(req.responseFormat)
  if (req.user !== undefined) body.user = req.user
  if (req.reasoningEffort !== undefined) body.reasoning_effort = req.reasoningEffort
  for (const key of Object.keys(req.unmapped)) {
    if (sameFamily && !key.includes("[") && !(key in body)) body[key] = req.unmapped[key]
    else dropped.push(key)
  }
  return { body, dropped }
}

type WireMessage = Record<string, unknown>

/** What a request's earlier reasoning is reported as when it is left out. */
const REASONING = "messages[].reasoning"

const encodeMessages = (req: ChatRequest, dropped: Array<string>): Array<WireMessage> => {
  const out: Array<WireMessage> = []
  if (req.system.length > 0) out.push({ role: "system", content: req.system.map((part) => part.text).join("\n\n") })
  for (const message of req.messages) {
    if (message.role === "assistant") {
      // Chat Completions has no field for earlier reasoning; the model does without it.
      if (message.content.some((part) => part.type === "reasoning") && !dropped.includes(REASONING)) dropped.push(REASONING)
      out.push(encodeAssistant(message))
    } else encodeUser(message, out, dropped)
  }
  return out
}

const encodeAssistant = (message: Message): WireMessage => {
  let text = ""
  const toolCalls: Array<unknown> = []
  for (const part of message.content) {
    if (part.type === "text") text += part.text
    else if (part.type === "tool_call") {
      toolCalls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } })
    }
  }
  if (toolCalls.length === 0) return { role: "assistant", content: text }
  return { role: "assistant", content: text === "" ? null : text, tool_calls: toolCalls }
}

const encodeUser = (message: Message, out: Array<WireMessage>, dropped: Array<string>): void => {
  const parts: Array<unknown> = []
  for (const part of message.content) {
    if (part.type === "tool_result") {
      let text = ""
      for (const inner of part.content) {
        if (inner.type === "text") text = text === "" ? inner.text : `${text}\n${inner.text}`
        else parts.push(encodePart(inner, dropped))
      }
      out.push({ role: "tool", tool_call_id: part.toolCallId, content: part.isError === true ? `Error: ${text}` : text })
    }
  }
  for (const part of message.content) {
    if (part.type === "tool_result" || part.type === "tool_call") continue
    const encoded = encodePart(part, dropped)
    if (encoded !== undefined) parts.push(encoded)
  }
  if (parts.length === 0) return
  const only = parts.length === 1 ? parts[0] as { type: string; text?: string } : undefined
  out.push({ role: "user", content: only?.type === "text" ? only.text : parts })
}

const encodePart = (part: Exclude<ContentPart, { type: "tool_result" | "tool_call" }>, dropped: Array<string>) => {
  switch (part.type) {
    case "reasoning":
      return undefined
    case "text":
      return { type: "text", text: part.text }
    case "image":
      return { type: "image_url", image_url: { url: mediaUrl(part.source) } }
    case "document":
      if (part.source.kind === "url") {
        dropped.push("messages[].document.url")
        return undefined
      }
      return {
        type: "file",
        file: part.title === undefined
          ? { file_data: mediaUrl(part.source) }
          : { filename: part.title, file_data: mediaUrl(part.source) }
      }
  }
}

const mediaUrl = (source: MediaSource): string =>
  source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`

const encodeTool = (tool: ToolDefinition): unknown => {
  const fn: Record<string, unknown> = { name: tool.name }
  if (tool.description !== undefined) fn.description = tool.description
  if (Object.keys(tool.parameters).length > 0) fn.parameters = tool.parameters
  if (tool.strict !== undefined) fn.strict = tool.strict
  return { type: "function", function: fn }
}

const encodeToolChoice = (choice: ToolChoice): unknown =>
  choice.type === "tool" ? { type: "function", function: { name: choice.name } } : choice.type

const encodeResponseFormat = (format: ResponseFormat): unknown => {
  if (format.type !== "json_schema") return { type: format.type }
  const spec: Record<string, unknown> = { name: format.name }
  if (format.description !== undefined) spec.description = format.description
  spec.schema = format.schema
  if (format.strict !== undefined) spec.strict = format.strict
  return { type: "json_schema", json_schema: spec }
}
