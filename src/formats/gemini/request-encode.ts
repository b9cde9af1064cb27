/**
 * Canonical `ChatRequest` → `generateContent` body (the same body serves
 * `streamGenerateContent`; the model is in the URL, not the body).
 *
 * - `system` → `systemInstruction`; user and assistant turns → `contents` with
 *   roles `user` and `model`, consecutive turns of one role merged, empty text
 *   left out (Gemini refuses an empty part).
 * - Images and documents: base64 → `inlineData`; a `data:` URL → `inlineData`;
 *   another URL → `fileData` (`fileUri`, the media type guessed from its
 *   extension). Nothing is fetched on the caller's behalf.
 * - Tool calls → `functionCall` (`args` an object; the thought signature taken
 *   back out of the id, mapping.ts; ids are the gateway's, never sent, as Gemini
 *   pairs calls and results by name and order); tool results → `functionResponse` named
 *   after the call they answer (`response` the result's JSON object, else
 *   `{content: text}`, `{error: text}` for a failed call), their images as
 *   `inlineData` parts beside it.
 * - A reasoning part's signature goes on the part after it (Gemini signs the
 *   part that follows its thinking); the thinking text itself is not sent back.
 * - Tools → one `functionDeclarations` tool; schemas in Gemini's subset
 *   (schema.ts, changes of meaning reported as `tools[].parameters.<keyword>`).
 *   Tool choice → `functionCallingConfig` (`required` is `ANY`, one named tool
 *   `ANY` with `allowedFunctionNames`). `parallel_tool_calls: false` has no
 *   Gemini equivalent and is reported.
 * - `response_format` json_object → `responseMimeType: application/json`;
 *   json_schema → that and `responseSchema` (subset, reported as
 *   `response_format.json_schema.<keyword>`).
 * - `reasoningEffort` → `thinkingConfig.thinkingBudget` (none 0, minimal 512,
 *   low 1024, medium 8192, high 24576, xhigh 32768) with `includeThoughts`; an
 *   Anthropic caller's `thinking` budget likewise.
 * - `user` and every unmapped caller field are reported as dropped.
 */
import type { ChatRequest, ContentPart, MediaSource, Message, ToolChoice } from "../../domain/chat.ts"
import type { EncodedRequest, RequestEncodeOptions } from "../contract.ts"
import { toolInput } from "../tool-input.ts"
import { isRecord, splitToolCallId } from "./mapping.ts"
import { geminiSchema } from "./schema.ts"

type Part = Record<string, unknown>

interface Content {
  readonly role: "user" | "model"
  readonly parts: Array<Part>
}

export const encodeGeminiRequest = (req: ChatRequest, options: RequestEncodeOptions): EncodedRequest => {
  const dropped: Array<string> = []
  const body: Record<string, unknown> = { contents: encodeContents(req.messages) }
  const system = req.system.filter((part) => part.text.trim() !== "").map((part) => ({ text: part.text }))
  if (system.length > 0) body.systemInstruction = { parts: system }
  if (req.tools !== undefined && req.tools.length > 0) {
    body.tools = [{ functionDeclarations: req.tools.map((tool) => encodeTool(tool, dropped)) }]
    const config = functionCallingConfig(req.toolChoice)
    if (config !== undefined) body.toolConfig = { functionCallingConfig: config }
    if (req.parallelToolCalls === false) dropped.push("parallel_tool_calls")
  }
  const generation = generationConfig(req, options, dropped)
  if (Object.keys(generation).length > 0) body.generationConfig = generation
  if (req.user !== undefined) dropped.push("user")
  for (const key of Object.keys(req.unmapped)) {
    if (!(key === "thinking" && options.callerFamily === "anthropic")) dropped.push(key)
  }
  return { body, dropped }
}

const encodeTool = (tool: NonNullable<ChatRequest["tools"]>[number], dropped: Array<string>): Part => {
  const declaration: Part = { name: tool.name }
  if (tool.description !== undefined) declaration.description = tool.description
  const parameters = geminiSchema(tool.parameters, "tools[].parameters", dropped)
  // A function without arguments has no `parameters` (Gemini refuses an object without properties).
  if (isRecord(parameters.properties)) declaration.parameters = parameters
  if (tool.strict !== undefined && !dropped.includes("tools[].function.strict")) dropped.push("tools[].function.strict")
  return declaration
}

const functionCallingConfig = (choice: ToolChoice | undefined): Part | undefined => {
  switch (choice?.type) {
    case undefined:
      return undefined
    case "auto":
      return { mode: "AUTO" }
    case "none":
      return { mode: "NONE" }
    case "required":
      return { mode: "ANY" }
    case "tool":
      return { mode: "ANY", allowedFunctionNames: [choice.name] }
  }
}

const THINKING_BUDGET: Readonly<Record<NonNullable<ChatRequest["reasoningEffort"]>, number>> = {
  none: 0,
  minimal: 512,
  low: 1024,
  medium: 8192,
  high: 24576,
  xhigh: 32768
}

const generationConfig = (req: ChatRequest, options: RequestEncodeOptions, dropped: Array<string>): Part => {
  const config: Part = {}
  const maxTokens = req.maxTokens ?? options.defaultMaxTokens
  if (maxTokens !== undefined) config.maxOutputTokens = maxTokens
  if (req.temperature !== undefined) config.temperature = req.temperature
  if (req.topP !== undefined) config.topP = req.topP
  if (req.topK !== undefined) config.topK = req.topK
  const stop = req.stop?.filter((sequence) => sequence !== "") ?? []
  if (stop.length > 0) config.stopSequences = stop
  const format = req.responseFormat
  if (format !== undefined && format.type !== "text") {
    config.responseMimeType = "application/json"
    if (format.type === "json_schema") {
      config.responseSchema = geminiSchema(format.schema, "response_format.json_schema", dropped)
    }
  }
  const budget = req.reasoningEffort !== undefined
    ? THINKING_BUDGET[req.reasoningEffort]
    : options.callerFamily === "anthropic"
    ? anthropicThinkingBudget(req.unmapped.thinking)
    : undefined
  if (budget !== undefined) config.thinkingConfig = budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true }
  return config
}

/** An Anthropic caller's `thinking: {type: "enabled", budget_tokens}` (0 for `disabled`), undefined otherwise. */
const anthropicThinkingBudget = (thinking: unknown): number | undefined => {
  if (!isRecord(thinking)) return undefined
  if (thinking.type === "disabled") return 0
  return thinking.type === "enabled" && typeof thinking.budget_tokens === "number" ? thinking.budget_tokens : undefined
}

const encodeContents = (messages: ReadonlyArray<Message>): Array<Content> => {
  const names = toolNames(messages)
  const contents: Array<Content> = []
  for (const message of messages) {
    const parts = encodeParts(message.content, names)
    if (parts.length === 0) continue
    const role = message.role === "assistant" ? "model" : "user"
    const last = contents.at(-1)
    if (last?.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  return contents
}

/** Function name per tool-call id, so a result can name the function it answers. */
const toolNames = (messages: ReadonlyArray<Message>): ReadonlyMap<string, string> => {
  const names = new Map<string, string>()
  for (const message of messages) {
    for (const part of message.content) if (part.type === "tool_call") names.set(part.id, part.name)
  }
  return names
}

const encodeParts = (content: ReadonlyArray<ContentPart>, names: ReadonlyMap<string, string>): Array<Part> => {
  const parts: Array<Part> = []
  let signature: string | undefined
  for (const part of content) {
    if (part.type === "reasoning") {
      signature = part.signature ?? signature
      continue
    }
    const encoded = encodePart(part, names)
    if (encoded.length === 0) continue
    if (signature !== undefined && encoded[0].thoughtSignature === undefined) encoded[0] = { ...encoded[0], thoughtSignature: signature }
    signature = undefined
    parts.push(...encoded)
  }
  return parts
}

const encodePart = (part: Exclude<ContentPart, { type: "reasoning" }>, names: ReadonlyMap<string, string>): Array<Part> => {
  switch (part.type) {
    case "text":
      return part.text === "" ? [] : [{ text: part.text }]
    case "image":
    case "document":
      return [mediaPart(part.source)]
    case "tool_call": {
      const { signature } = splitToolCallId(part.id)
      const call: Part = { name: part.name, args: toolInput(part.arguments) }
      return [signature === undefined ? { functionCall: call } : { functionCall: call, thoughtSignature: signature }]
    }
    case "tool_result": {
      const text = part.content.flatMap((inner) => (inner.type === "text" ? [inner.text] : [])).join("")
      const name = names.get(part.toolCallId) ?? splitToolCallId(part.toolCallId).id
      const response: Part = { name, response: responseOf(text, part.isError === true) }
      const images = part.content.flatMap((inner) => (inner.type === "image" ? [mediaPart(inner.source)] : []))
      return [{ functionResponse: response }, ...images]
    }
  }
}

const responseOf = (text: string, isError: boolean): Record<string, unknown> => {
  if (isError) return { error: text }
  try {
    const value: unknown = JSON.parse(text)
    if (isRecord(value)) return value
  } catch {
    // plain text: wrapped below
  }
  return { content: text }
}

const MEDIA_TYPES: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  heic: "image/heic",
  pdf: "application/pdf"
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s

const mediaPart = (source: MediaSource): Part => {
  if (source.kind === "base64") return { inlineData: { mimeType: source.mediaType, data: source.data } }
  const data = DATA_URL.exec(source.url)
  if (data !== null) return { inlineData: { mimeType: data[1], data: data[2] } }
  const extension = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(source.url)?.[1]?.toLowerCase()
  const mimeType = extension !== undefined && Object.hasOwn(MEDIA_TYPES, extension) ? MEDIA_TYPES[extension] : undefined
  return { fileData: mimeType === undefined ? { fileUri: source.url } : { mimeType, fileUri: source.url } }
}
