/**
 * Canonical `ChatRequest` → Messages body (docs/reference/translation.md §2–§7).
 *
 * - `max_tokens` is required: the request's, else `defaultMaxTokens`, else 4096.
 * - Consecutive messages of one role are merged; in a user message all
 *   `tool_result` blocks come first (Anthropic answers 400 otherwise).
 * - Empty and whitespace-only text blocks are skipped (Anthropic rejects them);
 *   a message left with no blocks is skipped. The final assistant message
 *   (prefill) loses trailing whitespace, which Anthropic also rejects.
 * - A conversation that starts with the assistant gets a minimal user turn (`.`).
 * - A reasoning part with a signature is a `thinking` block (Anthropic accepts
 *   earlier thinking only signed, and checks the signature against the text),
 *   a redacted one the `redacted_thinking` block it came from; one with
 *   neither is left out.
 * - Tool ids are cleaned to `[a-zA-Z0-9_-]` with `cleanToolId`, the same
 *   mapping for `tool_use.id` and `tool_result.tool_use_id`.
 * - Tool-call arguments that are empty, invalid JSON or not a JSON object
 *   become `{}` (`input` must be an object; LiteLLM parses the same way).
 * - `temperature` is clamped to [0, 1] silently (Portkey does the same).
 * - Whitespace-only stop sequences are left out.
 * - A JSON `response_format` from a Chat or Responses caller is refused before
 *   it gets here (spec: messages-style providers answer such requests 400); if
 *   one gets here anyway it is reported as dropped. An Anthropic caller's own
 *   `output_config.format` (decoded to the same canonical format) goes back as it came.
 * - `reasoningEffort` from another family becomes a `thinking` budget (low 1024,
 *   medium 2048, high 4096, xhigh 8192 tokens, never reaching `max_tokens`);
 *   thinking excludes `temperature`, `top_k`, a `top_p` below 0.95 and a forced
 *   tool, so those are left out (reported dropped), or, with a forced tool or a
 *   limit too small for the 1024-token minimum, the effort is.
 * - Tool `strict` is passed only for an Anthropic caller (older API versions
 *   reject the field); for others it is reported as dropped.
 */
import type { ChatRequest, ContentPart, MediaSource, ToolChoice, ToolDefinition } from "../../domain/chat.ts"
import type { EncodedRequest, RequestEncodeOptions } from "../contract.ts"
import { cleanToolId, toolInput } from "./mapping.ts"

export const DEFAULT_MAX_TOKENS = 4096

/** Text prepended when a conversation would otherwise start with the assistant. */
const LEADING_USER_TEXT = "."

const EMPTY_INPUT_SCHEMA: Readonly<Record<string, unknown>> = { type: "object", properties: {} }

/** Whether the request asks for JSON output, which Messages cannot express (spec: answer 400). */
export const unsupportedResponseFormat = (req: ChatRequest): boolean =>
  req.responseFormat !== undefined && req.responseFormat.type !== "text"

export const encodeAnthropicRequest = (req: ChatRequest, options: RequestEncodeOptions): EncodedRequest => {
  const sameFamily = options.callerFamily === "anthropic"
  const dropped: Array<string> = []
  const maxTokens = req.maxTokens ?? options.defaultMaxTokens ?? DEFAULT_MAX_TOKENS
  const body: Record<string, unknown> = { model: options.model, max_tokens: maxTokens }
  const thinking = sameFamily ? undefined : thinkingBudget(req, maxTokens, dropped)
  const system = req.system.filter((part) => !isBlank(part.text)).map((part) => ({ type: "text", text: part.text }))
  if (system.length > 0) body.system = system
  body.messages = encodeMessages(req)
  const stop = req.stop?.filter((sequence) => !isBlank(sequence)) ?? []
  if (stop.length > 0) body.stop_sequences = stop
  if (thinking === undefined) {
    if (req.temperature !== undefined) body.temperature = Math.min(1, Math.max(0, req.temperature))
    if (req.topP !== undefined) body.top_p = req.topP
    if (req.topK !== undefined) body.top_k = req.topK
  } else {
    body.thinking = { type: "enabled", budget_tokens: thinking }
    if (req.temperature !== undefined) dropped.push("temperature")
    if (req.topK !== undefined) dropped.push("top_k")
    if (req.topP !== undefined) {
      if (req.topP >= 0.95) body.top_p = req.topP
      else dropped.push("top_p")
    }
  }
  if (req.stream) body.stream = true
  if (req.user !== undefined) body.metadata = { user_id: req.user }
  if (req.tools !== undefined && req.tools.length > 0) {
    if (!sameFamily && req.tools.some((tool) => tool.strict !== undefined)) dropped.push("tools[].function.strict")
    body.tools = req.tools.map((tool) => encodeTool(tool, sameFamily))
    const choice = encodeToolChoice(req.toolChoice, req.parallelToolCalls)
    if (choice !== undefined) body.tool_choice = choice
  }
  const outputConfig: Record<string, unknown> = {}
  if (sameFamily && req.responseFormat?.type === "json_schema") {
    outputConfig.format = { type: "json_schema", schema: req.responseFormat.schema }
  } else if (unsupportedResponseFormat(req)) {
    dropped.push("response_format")
  }
  if (sameFamily && req.reasoningEffort !== undefined) outputConfig.effort = req.reasoningEffort
  if (Object.keys(outputConfig).length > 0) body.output_config = outputConfig
  for (const key of Object.keys(req.unmapped)) {
    if (sameFamily && !key.includes("[") && !(key in body)) body[key] = req.unmapped[key]
    else dropped.push(key)
  }
  return { body, dropped }
}

const isBlank = (text: string): boolean => text.trim() === ""

/** Thinking budget per reasoning effort (LiteLLM's constants; Anthropic's minimum is 1024). */
const EFFORT_BUDGET: Partial<Record<NonNullable<ChatRequest["reasoningEffort"]>, number>> = {
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 8192
}
const MIN_THINKING_BUDGET = 1024

/** The `thinking` budget for another family's reasoning effort, or undefined (reported dropped when it cannot be honoured). */
const thinkingBudget = (req: ChatRequest, maxTokens: number, dropped: Array<string>): number | undefined => {
  const effort = req.reasoningEffort
  if (effort === undefined) return undefined
  const wanted = EFFORT_BUDGET[effort]
  if (wanted === undefined) return undefined // none / minimal: no thinking, which is what they ask for
  const budget = Math.min(wanted, maxTokens - 1)
  const forcedTool = req.toolChoice?.type === "required" || req.toolChoice?.type === "tool"
  if (budget < MIN_THINKING_BUDGET || forcedTool) {
    dropped.push("reasoning_effort")
    return undefined
  }
  return budget
}

type Block = Record<string, unknown>

interface Turn {
  readonly role: "user" | "assistant"
  readonly content: Array<Block>
}

const encodeMessages = (req: ChatRequest): Array<Turn> => {
  const turns: Array<Turn> = []
  for (const message of req.messages) {
    const blocks: Array<Block> = []
    for (const part of message.content) {
      const block = encodeBlock(part)
      if (block !== undefined) blocks.push(block)
    }
    if (blocks.length === 0) continue
    const last = turns.at(-1)
    if (last?.role === message.role) last.content.push(...blocks)
    else turns.push({ role: message.role, content: blocks })
  }
  for (const turn of turns) {
    if (turn.role === "user") toolResultsFirst(turn.content)
  }
  trimPrefill(turns)
  if (turns[0]?.role === "assistant") turns.unshift({ role: "user", content: [{ type: "text", text: LEADING_USER_TEXT }] })
  return turns
}

/** Stable partition: every `tool_result` block before the other blocks. */
const toolResultsFirst = (blocks: Array<Block>): void => {
  const results = blocks.filter((block) => block.type === "tool_result")
  if (results.length === 0 || results.length === blocks.length) return
  const others = blocks.filter((block) => block.type !== "tool_result")
  blocks.splice(0, blocks.length, ...results, ...others)
}

const trimPrefill = (turns: Array<Turn>): void => {
  const last = turns.at(-1)
  if (last?.role !== "assistant") return
  const block = last.content.at(-1)
  if (block?.type !== "text") return
  const text = (block.text as string).trimEnd()
  if (text !== "") last.content[last.content.length - 1] = { type: "text", text }
  else if (last.content.length > 1) last.content.pop()
  else turns.pop()
}

const encodeBlock = (part: ContentPart): Block | undefined => {
  switch (part.type) {
    case "text":
      return isBlank(part.text) ? undefined : { type: "text", text: part.text }
    case "image":
      return { type: "image", source: encodeSource(part.source) }
    case "document":
      return part.title === undefined
        ? { type: "document", source: encodeSource(part.source) }
        : { type: "document", source: encodeSource(part.source), title: part.title }
    case "tool_call":
      return { type: "tool_use", id: cleanToolId(part.id), name: part.name, input: toolInput(part.arguments) }
    case "tool_result": {
      const content: Array<Block> = []
      for (const inner of part.content) {
        const block = encodeBlock(inner)
        if (block !== undefined) content.push(block)
      }
      const result: Block = { type: "tool_result", tool_use_id: cleanToolId(part.toolCallId) }
      if (content.length === 1 && content[0].type === "text") result.content = content[0].text
      else if (content.length > 0) result.content = content
      if (part.isError === true) result.is_error = true
      return result
    }
    case "reasoning":
      if (part.redacted !== undefined) return { type: "redacted_thinking", data: part.redacted }
      return part.signature === undefined ? undefined : { type: "thinking", thinking: part.text, signature: part.signature }
  }
}

const encodeSource = (source: MediaSource): Block =>
  source.kind === "base64"
    ? { type: "base64", media_type: source.mediaType, data: source.data }
    : { type: "url", url: source.url }

const encodeTool = (tool: ToolDefinition, withStrict: boolean): Block => {
  const wire: Block = { name: tool.name }
  if (tool.description !== undefined) wire.description = tool.description
  wire.input_schema = Object.keys(tool.parameters).length > 0 ? tool.parameters : EMPTY_INPUT_SCHEMA
  if (withStrict && tool.strict !== undefined) wire.strict = tool.strict
  return wire
}

const encodeToolChoice = (choice: ToolChoice | undefined, parallel: boolean | undefined): Block | undefined => {
  const wire: Block | undefined = choice === undefined
    ? undefined
    : choice.type === "required"
    ? { type: "any" }
    : choice.type === "tool"
    ? { type: "tool", name: choice.name }
    : { type: choice.type }
  if (parallel !== false || wire?.type === "none") return wire
  return { ...(wire ?? { type: "auto" }), disable_parallel_tool_use: true }
}
