/**
 * The request half of a GenAI span: the parameters the conventions name
 * (`gen_ai.request.*`, `gen_ai.output.type`) and, with content capture, the
 * input messages and system instructions.
 *
 * Two sources, one result: the canonical `ChatRequest` (normalized path), or
 * the caller's wire JSON as forwarded (fast path), whose parameters are read
 * straight from the JSON so nothing is decoded when content is not captured.
 * Content comes from the canonical request (the wire source's `canonical`
 * thunk, called only when capturing), except for the plain conversations most
 * calls are (text messages only, `plainMessagesOf`), read from the wire JSON
 * without decoding the whole request; both paths build the same attributes,
 * test/pipeline/telemetry/genai-request.test.ts holds them to it.
 */
import type { CallerFormat, ChatRequest, ResponseFormat } from "../../../domain/index.ts"
import { GATEWAY_GENAI, GEN_AI } from "./attributes.ts"
import { capJson, fitsCap, inputMessagesOf, systemInstructionsOf } from "./messages.ts"
import type { GenAiMessage, Part } from "./messages.ts"

export type Attributes = Record<string, string | number | boolean | ReadonlyArray<string>>

/** What a chat call asked for: the canonical request, or the wire JSON forwarded as it is. */
export type GenAiRequest =
  | { readonly format: "canonical"; readonly request: ChatRequest }
  | {
    readonly format: CallerFormat
    /** The body sent upstream (variant overrides applied). */
    readonly json: Readonly<Record<string, unknown>>
    /** The same request decoded; called only when content is captured (undefined if it does not decode). */
    readonly canonical: () => ChatRequest | undefined
  }

interface Parameters {
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  readonly topP?: number | undefined
  readonly topK?: number | undefined
  readonly stop?: ReadonlyArray<string> | undefined
  readonly seed?: number | undefined
  readonly frequencyPenalty?: number | undefined
  readonly presencePenalty?: number | undefined
  readonly choiceCount?: number | undefined
  readonly stream: boolean
  readonly outputType?: string | undefined
}

const num = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined)

const record = (value: unknown): Readonly<Record<string, unknown>> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

const strings = (value: unknown): ReadonlyArray<string> | undefined => {
  if (typeof value === "string") return [value]
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined
}

/** `gen_ai.output.type` of a requested format: a JSON object or schema is `json`. */
const outputTypeOfWire = (type: unknown): string | undefined =>
  type === "json_object" || type === "json_schema" ? "json" : type === "text" ? "text" : undefined

const outputTypeOf = (format: ResponseFormat | undefined): string | undefined => outputTypeOfWire(format?.type)

/** `n` of 1 is the default and not reported (the conventions ask for the count only when it is not 1). */
const choiceCount = (value: unknown): number | undefined => {
  const n = num(value)
  return n === undefined || n === 1 ? undefined : n
}

const fromCanonical = (request: ChatRequest): Parameters => ({
  temperature: request.temperature,
  maxTokens: request.maxTokens,
  topP: request.topP,
  topK: request.topK,
  stop: request.stop,
  seed: num(request.unmapped.seed),
  frequencyPenalty: num(request.unmapped.frequency_penalty),
  presencePenalty: num(request.unmapped.presence_penalty),
  choiceCount: choiceCount(request.unmapped.n),
  stream: request.stream,
  outputType: outputTypeOf(request.responseFormat)
})

const fromWire = (format: CallerFormat, json: Readonly<Record<string, unknown>>): Parameters => {
  const stream = json.stream === true
  switch (format) {
    case "openai":
      return {
        temperature: num(json.temperature),
        maxTokens: num(json.max_completion_tokens) ?? num(json.max_tokens),
        topP: num(json.top_p),
        stop: strings(json.stop),
        seed: num(json.seed),
        frequencyPenalty: num(json.frequency_penalty),
        presencePenalty: num(json.presence_penalty),
        choiceCount: choiceCount(json.n),
        stream,
        outputType: outputTypeOfWire(record(json.response_format)?.type)
      }
    case "anthropic":
      return {
        temperature: num(json.temperature),
        maxTokens: num(json.max_tokens),
        topP: num(json.top_p),
        topK: num(json.top_k),
        stop: strings(json.stop_sequences),
        stream,
        outputType: record(record(json.output_config)?.format) === undefined ? undefined : "json"
      }
    case "responses":
      return {
        temperature: num(json.temperature),
        maxTokens: num(json.max_output_tokens),
        topP: num(json.top_p),
        stream,
        outputType: outputTypeOfWire(record(record(json.text)?.format)?.type)
      }
  }
}

const parameterAttributes = (p: Parameters, attributes: Attributes): void => {
  if (p.temperature !== undefined) attributes[GEN_AI.requestTemperature] = p.temperature
  if (p.maxTokens !== undefined) attributes[GEN_AI.requestMaxTokens] = p.maxTokens
  if (p.topP !== undefined) attributes[GEN_AI.requestTopP] = p.topP
  if (p.topK !== undefined) attributes[GEN_AI.requestTopK] = p.topK
  if (p.stop !== undefined && p.stop.length > 0) attributes[GEN_AI.requestStopSequences] = p.stop
  if (p.seed !== undefined) attributes[GEN_AI.requestSeed] = p.seed
  if (p.frequencyPenalty !== undefined) attributes[GEN_AI.requestFrequencyPenalty] = p.frequencyPenalty
  if (p.presencePenalty !== undefined) attributes[GEN_AI.requestPresencePenalty] = p.presencePenalty
  if (p.choiceCount !== undefined) attributes[GEN_AI.requestChoiceCount] = p.choiceCount
  // The conventions: set if and only if the request streams.
  if (p.stream) attributes[GEN_AI.requestStream] = true
  if (p.outputType !== undefined) attributes[GEN_AI.outputType] = p.outputType
}

/** The captured input: the conversation and the system instructions, in the conventions' forms. */
interface InputContent {
  readonly messages: ReadonlyArray<GenAiMessage>
  readonly system: ReadonlyArray<Part>
}

const contentOf = (request: ChatRequest): InputContent => ({ messages: inputMessagesOf(request), system: systemInstructionsOf(request) })

/** A captured input as JSON text, in the conventions' forms: the messages and the system instructions. */
interface InputJson {
  readonly messages: string
  /** `[]` when there are none. */
  readonly system: string
}

const textPartJson = (text: string): string => `{"type":"text","content":${JSON.stringify(text)}}`

const messageJson = (role: string, parts: string): string => `{"role":${JSON.stringify(role)},"parts":[${parts}]}`

/** Text blocks (`[{type: "text", text}]`) as text parts' JSON, comma-separated; undefined if any block is something else. */
const textBlocksJson = (blocks: ReadonlyArray<unknown>): string | undefined => {
  let json = ""
  for (const block of blocks) {
    const text = record(block)
    if (text?.type !== "text" || typeof text.text !== "string") return undefined
    json = joined(json, textPartJson(text.text))
  }
  return json
}

/** Comma-separated JSON items, one more. */
const joined = (items: string, item: string): string => (items === "" ? item : `${items},${item}`)

const inputJson = (messages: string, system: string): InputJson => ({ messages: `[${messages}]`, system: system === "" ? "[]" : `[${system}]` })

/**
 * The content of a plain conversation read from the wire JSON, as the
 * canonical decoding would give it, written as JSON text (what
 * `JSON.stringify` writes of the conventions' objects, without making them):
 * OpenAI messages of roles `system`, `developer`, `user`, `assistant` with
 * string content and nothing else that carries content; Anthropic messages of
 * text (strings or text blocks) and a text `system`. Undefined for anything
 * else (tools, media, other roles, another format): the canonical request is
 * decoded then.
 */
const plainContentJson = (format: CallerFormat, json: Readonly<Record<string, unknown>>): InputJson | undefined => {
  const wire = json.messages
  if (!Array.isArray(wire)) return undefined
  let messages = ""
  let system = ""
  if (format === "openai") {
    for (const item of wire) {
      const message = record(item)
      if (message === undefined || typeof message.content !== "string") return undefined
      if (message.tool_calls != null || message.refusal != null || message.audio != null || message.function_call != null) return undefined
      const role = message.role
      if (role === "system" || role === "developer") system = joined(system, textPartJson(message.content))
      else if (role === "user" || role === "assistant") messages = joined(messages, messageJson(role, textPartJson(message.content)))
      else return undefined
    }
    return inputJson(messages, system)
  }
  if (format !== "anthropic") return undefined
  const top = json.system
  if (typeof top === "string") system = textPartJson(top)
  else if (Array.isArray(top)) {
    const parts = textBlocksJson(top)
    if (parts === undefined) return undefined
    system = parts
  } else if (top != null) return undefined
  for (const item of wire) {
    const message = record(item)
    const role = message?.role
    if (message === undefined || (role !== "user" && role !== "assistant")) return undefined
    const parts = typeof message.content === "string" ? textPartJson(message.content) : Array.isArray(message.content) ? textBlocksJson(message.content) : undefined
    if (parts === undefined) return undefined
    // The canonical decoding keeps a message without parts; the conventions' form leaves it out.
    if (parts !== "") messages = joined(messages, messageJson(role, parts))
  }
  return inputJson(messages, system)
}

/** A plain conversation's JSON text as the conventions' objects (what a reader of the JSON gets). */
const contentOfJson = (content: InputJson): InputContent => ({
  messages: JSON.parse(content.messages) as Array<GenAiMessage>,
  system: JSON.parse(content.system) as Array<Part>
})

/** `plainContentJson` as the conventions' objects. */
export const plainMessagesOf = (format: CallerFormat, json: Readonly<Record<string, unknown>>): InputContent | undefined => {
  const content = plainContentJson(format, json)
  return content === undefined ? undefined : contentOfJson(content)
}

const contentAttributes = (content: InputContent, attributes: Attributes): void => {
  const input = capJson(content.messages)
  attributes[GEN_AI.inputMessages] = input.json
  let truncated = input.truncated
  const system = content.system
  if (system.length > 0) {
    const instructions = capJson(system)
    attributes[GEN_AI.systemInstructions] = instructions.json
    truncated ||= instructions.truncated
  }
  if (truncated) attributes[GATEWAY_GENAI.contentTruncated] = true
}

/** `contentAttributes` of a plain conversation's JSON text: as it is when within the cap, capped from its objects otherwise. */
const plainContentAttributes = (content: InputJson, attributes: Attributes): void => {
  if (!fitsCap(content.messages) || !fitsCap(content.system)) {
    contentAttributes(contentOfJson(content), attributes)
    return
  }
  attributes[GEN_AI.inputMessages] = content.messages
  if (content.system !== "[]") attributes[GEN_AI.systemInstructions] = content.system
}

/** The request attributes of a chat call's GenAI span. */
export const chatRequestAttributes = (source: GenAiRequest, captureContent: boolean): Attributes => {
  const attributes: Attributes = {}
  if (source.format === "canonical") {
    parameterAttributes(fromCanonical(source.request), attributes)
    if (captureContent) contentAttributes(contentOf(source.request), attributes)
    return attributes
  }
  parameterAttributes(fromWire(source.format, source.json), attributes)
  if (captureContent) {
    const plain = plainContentJson(source.format, source.json)
    if (plain !== undefined) plainContentAttributes(plain, attributes)
    else {
      const request = source.canonical()
      if (request !== undefined) contentAttributes(contentOf(request), attributes)
    }
  }
  return attributes
}

/** The request attributes of an embeddings call, from the JSON body sent upstream. */
export const embeddingsRequestAttributes = (json: Readonly<Record<string, unknown>>): Attributes => {
  const attributes: Attributes = {}
  if (typeof json.encoding_format === "string") attributes[GEN_AI.requestEncodingFormats] = [json.encoding_format]
  const dimensions = num(json.dimensions)
  if (dimensions !== undefined) attributes[GEN_AI.embeddingsDimensionCount] = dimensions
  return attributes
}
