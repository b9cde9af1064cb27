/**
 * Canonical `ChatRequest` → Converse / ConverseStream body (the model is in the
 * URL; the same body serves both).
 *
 * - `system` → `system: [{text}]`; turns → `messages` (`user` / `assistant`),
 *   consecutive turns of one role merged, tool results first in a user turn,
 *   empty text left out; a conversation that starts with the assistant gets a
 *   minimal user turn.
 * - Images and documents: base64 → `{format, source: {bytes}}`; an `s3://` URL
 *   → `source.s3Location`. Converse takes no other URL and the gateway fetches
 *   nothing, so such an image is left out and reported (`messages[].image_url`).
 * - Tool calls → `toolUse` (`input` an object), results → `toolResult`
 *   (`status: error` for a failed call), ids kept as they are.
 * - Reasoning with a signature → `reasoningContent.reasoningText`, redacted →
 *   `redactedContent`; unsigned reasoning is left out (Bedrock checks it).
 * - Tools → `toolConfig.tools[].toolSpec`; choice `auto`/`required`/a tool →
 *   `auto`/`any`/`tool`; `none` has no Converse form (reported; tools are kept,
 *   since earlier tool calls need them). `parallel_tool_calls: false` reported.
 * - `response_format` json_schema / json_object → a forced tool (`JSON_TOOL`,
 *   mapping.ts) whose input schema is the schema (an object for json_object),
 *   beside the caller's tools; the caller's tool choice then gives way to it.
 * - `maxTokens`, `temperature`, `topP`, `stop` → `inferenceConfig`; `topK`
 *   and a reasoning effort (as an Anthropic `thinking` budget, for Claude
 *   models) → `additionalModelRequestFields`.
 * - Prompt-cache breakpoints (`cachePoint` on a part, a system text or a tool,
 *   from Anthropic's `cache_control`) → a `cachePoint` block after it, for the
 *   models that take one (Claude and Nova); for any other model the caller's
 *   `cache_control` is reported as dropped.
 * - `user` and unmapped caller fields are reported as dropped.
 */
import type { ChatRequest, ContentPart, MediaSource, Message, ToolChoice } from "../../domain/chat.ts"
import type { EncodedRequest, RequestEncodeOptions } from "../contract.ts"
import { toolInput } from "../tool-input.ts"
import { documentFormatOf, imageFormatOf, isRecord, JSON_TOOL } from "./mapping.ts"

type Block = Record<string, unknown>

interface Turn {
  readonly role: "user" | "assistant"
  readonly content: Array<Block>
}

const EFFORT_BUDGET: Partial<Record<NonNullable<ChatRequest["reasoningEffort"]>, number>> = {
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 8192
}

/** Bedrock models that take `cachePoint` blocks (prompt caching). */
const CACHING_MODELS = /anthropic\.claude|amazon\.nova/

const CACHE_POINT: Block = { cachePoint: { type: "default" } }

/** The caller's cache markers as notes (Anthropic `cache_control`): carried as `cachePoint`s, not dropped, where the model takes them. */
const CACHE_NOTES = new Set(["system[].cache_control", "messages[].cache_control", "tools[].cache_control"])

export const encodeBedrockRequest = (req: ChatRequest, options: RequestEncodeOptions): EncodedRequest => {
  const dropped: Array<string> = []
  const caching = CACHING_MODELS.test(options.model)
  const body: Record<string, unknown> = { messages: encodeMessages(req.messages, dropped, caching) }
  const system = req.system.filter((part) => part.text.trim() !== "").flatMap((part) => withCachePoint({ text: part.text }, part, caching))
  if (system.length > 0) body.system = system
  const inference: Block = {}
  const maxTokens = req.maxTokens ?? options.defaultMaxTokens
  if (maxTokens !== undefined) inference.maxTokens = maxTokens
  if (req.temperature !== undefined) inference.temperature = req.temperature
  if (req.topP !== undefined) inference.topP = req.topP
  const stop = req.stop?.filter((sequence) => sequence.trim() !== "") ?? []
  if (stop.length > 0) inference.stopSequences = stop
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference
  const tools = toolConfig(req, dropped, caching)
  if (tools !== undefined) body.toolConfig = tools
  const additional: Block = {}
  if (req.topK !== undefined) additional.top_k = req.topK
  const budget = req.reasoningEffort === undefined ? undefined : EFFORT_BUDGET[req.reasoningEffort]
  if (budget !== undefined) additional.thinking = { type: "enabled", budget_tokens: budget }
  else if (options.callerFamily === "anthropic" && isRecord(req.unmapped.thinking)) additional.thinking = req.unmapped.thinking
  if (Object.keys(additional).length > 0) body.additionalModelRequestFields = additional
  if (req.user !== undefined) dropped.push("user")
  for (const key of Object.keys(req.unmapped)) {
    if (!(key === "thinking" && additional.thinking !== undefined) && !(caching && CACHE_NOTES.has(key))) dropped.push(key)
  }
  return { body, dropped }
}

/** `block`, then a `cachePoint` when `part` carries a breakpoint and the model takes one. */
const withCachePoint = (block: Block, part: { readonly cachePoint?: true | undefined }, caching: boolean): Array<Block> =>
  caching && part.cachePoint === true ? [block, CACHE_POINT] : [block]

const toolConfig = (req: ChatRequest, dropped: Array<string>, caching: boolean): Block | undefined => {
  const format = req.responseFormat
  const json = format !== undefined && format.type !== "text"
  const tools: Array<Block> = (req.tools ?? []).flatMap((tool) =>
    withCachePoint({
      toolSpec: {
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        inputSchema: { json: Object.keys(tool.parameters).length > 0 ? tool.parameters : { type: "object", properties: {} } }
      }
    }, tool, caching)
  )
  if (json) {
    const schema = format.type === "json_schema" ? format.schema : { type: "object" }
    tools.push({ toolSpec: { name: JSON_TOOL, description: "Give the answer as this tool's input.", inputSchema: { json: schema } } })
    return { tools, toolChoice: { tool: { name: JSON_TOOL } } }
  }
  if (tools.length === 0) return undefined
  if (req.parallelToolCalls === false) dropped.push("parallel_tool_calls")
  const choice = toolChoiceOf(req.toolChoice, dropped)
  return choice === undefined ? { tools } : { tools, toolChoice: choice }
}

const toolChoiceOf = (choice: ToolChoice | undefined, dropped: Array<string>): Block | undefined => {
  switch (choice?.type) {
    case undefined:
      return undefined
    case "auto":
      return { auto: {} }
    case "required":
      return { any: {} }
    case "tool":
      return { tool: { name: choice.name } }
    case "none":
      dropped.push("tool_choice")
      return undefined
  }
}

const encodeMessages = (messages: ReadonlyArray<Message>, dropped: Array<string>, caching: boolean): Array<Turn> => {
  const turns: Array<Turn> = []
  for (const message of messages) {
    const blocks = message.content.flatMap((part) => {
      const encoded = encodeBlock(part, dropped)
      return encoded.length === 0 ? encoded : [...encoded.slice(0, -1), ...withCachePoint(encoded[encoded.length - 1], part, caching)]
    })
    if (blocks.length === 0) continue
    const last = turns.at(-1)
    if (last?.role === message.role) last.content.push(...blocks)
    else turns.push({ role: message.role, content: blocks })
  }
  for (const turn of turns) {
    if (turn.role !== "user") continue
    const results = turn.content.filter((block) => block.toolResult !== undefined)
    if (results.length > 0 && results.length < turn.content.length) {
      turn.content.splice(0, turn.content.length, ...results, ...turn.content.filter((block) => block.toolResult === undefined))
    }
  }
  if (turns[0]?.role === "assistant") turns.unshift({ role: "user", content: [{ text: "." }] })
  return turns
}

const note = (dropped: Array<string>, name: string): Array<Block> => {
  if (!dropped.includes(name)) dropped.push(name)
  return []
}

const encodeBlock = (part: ContentPart, dropped: Array<string>): Array<Block> => {
  switch (part.type) {
    case "text":
      return part.text.trim() === "" ? [] : [{ text: part.text }]
    case "image": {
      const source = sourceOf(part.source)
      const format = part.source.kind === "base64" ? imageFormatOf(part.source.mediaType) : imageFormatOf(extensionOf(part.source.url))
      return source === undefined || format === undefined ? note(dropped, "messages[].image_url") : [{ image: { format, source } }]
    }
    case "document": {
      const source = sourceOf(part.source)
      const format = part.source.kind === "base64" ? documentFormatOf(part.source.mediaType) : "pdf"
      if (source === undefined || format === undefined) return note(dropped, "messages[].document")
      return [{ document: { format, name: documentName(part.title), source } }]
    }
    case "tool_call":
      return [{ toolUse: { toolUseId: part.id, name: part.name, input: toolInput(part.arguments) } }]
    case "tool_result": {
      const content = part.content.flatMap((inner): Array<Block> =>
        inner.type === "text"
          ? (inner.text === "" ? [] : [{ text: inner.text }])
          : encodeBlock(inner, dropped)
      )
      return [{ toolResult: { toolUseId: part.toolCallId, content: content.length > 0 ? content : [{ text: "" }], ...(part.isError === true ? { status: "error" } : {}) } }]
    }
    case "reasoning":
      if (part.redacted !== undefined) return [{ reasoningContent: { redactedContent: part.redacted } }]
      return part.signature === undefined ? [] : [{ reasoningContent: { reasoningText: { text: part.text, signature: part.signature } } }]
  }
}

/** `bytes` for inline data, `s3Location` for an `s3://` URL; undefined for any other URL (nothing is fetched). */
const sourceOf = (source: MediaSource): Block | undefined => {
  if (source.kind === "base64") return { bytes: source.data }
  const data = /^data:[^;,]+;base64,(.*)$/s.exec(source.url)
  if (data !== null) return { bytes: data[1] }
  return source.url.startsWith("s3://") ? { s3Location: { uri: source.url } } : undefined
}

const extensionOf = (url: string): string => {
  const data = /^data:([^;,]+);/.exec(url)
  if (data !== null) return data[1]
  return /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1] ?? ""
}

/** Converse document names allow letters, digits, spaces, hyphens, parentheses and brackets only. */
const documentName = (title: string | undefined): string =>
  (title ?? "document").replace(/[^A-Za-z0-9 ()[\]-]/g, " ").replace(/\s+/g, " ").trim() || "document"
