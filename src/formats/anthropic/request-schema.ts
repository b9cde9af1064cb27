/**
 * Wire schema of a Messages request (docs/reference/anthropic-messages.md §2), as far as the
 * gateway reads it. Fields the canonical model has no home for are not
 * declared here: the decoder copies them to `unmapped` from the raw body.
 *
 * Content blocks of types the canonical model does not know (`thinking`,
 * `redacted_thinking`, server-tool blocks, …) are accepted as `OtherBlock`
 * so they can be reported as dropped; blocks of a known type are validated.
 *
 * Built once at module level; `decodeRequestBody` is the only entry point.
 */
import { Schema } from "effect"
import { REASONING_EFFORTS } from "../../domain/chat.ts"
import { makeBodyDecoder } from "../body-decoder.ts"

const optionalNullable = <S extends Schema.Constraint>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const cacheControl = optionalNullable(Schema.Unknown)

const CANONICAL_BLOCK_TYPES: ReadonlySet<string> = new Set(["text", "image", "document", "tool_use", "tool_result"])

/** A block type the canonical model has no part for. */
export type OtherBlockType = string & { readonly __otherBlock: true }

const OtherBlock = Schema.Struct({
  type: Schema.String.pipe(
    Schema.refine((type: string): type is OtherBlockType => !CANONICAL_BLOCK_TYPES.has(type))
  )
})

export type OtherBlock = typeof OtherBlock.Type

export const isOtherBlock = (block: { readonly type: string }): block is OtherBlock =>
  !CANONICAL_BLOCK_TYPES.has(block.type)

const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String, cache_control: cacheControl })

const Base64Source = Schema.Struct({ type: Schema.Literal("base64"), media_type: Schema.String, data: Schema.String })
const UrlSource = Schema.Struct({ type: Schema.Literal("url"), url: Schema.String })
const FileSource = Schema.Struct({ type: Schema.Literal("file"), file_id: Schema.String })
const PlainTextSource = Schema.Struct({
  type: Schema.Literal("text"),
  media_type: Schema.optionalKey(Schema.String),
  data: Schema.String
})
const ContentSource = Schema.Struct({ type: Schema.Literal("content"), content: Schema.Unknown })

const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: Schema.Union([Base64Source, UrlSource, FileSource]).annotate({
    expected: "an image source of type \"base64\", \"url\" or \"file\""
  }),
  cache_control: cacheControl
})

const DocumentBlock = Schema.Struct({
  type: Schema.Literal("document"),
  source: Schema.Union([Base64Source, UrlSource, PlainTextSource, FileSource, ContentSource]).annotate({
    expected: "a document source of type \"base64\", \"url\", \"text\", \"file\" or \"content\""
  }),
  title: optionalNullable(Schema.String),
  cache_control: cacheControl
})

const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown,
  cache_control: cacheControl
})

const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.optionalKey(
    Schema.Union([
      Schema.String,
      Schema.Array(Schema.Union([TextBlock, ImageBlock, OtherBlock]).annotate({ expected: "a content block" }))
    ]).annotate({ expected: "string or array of content blocks" })
  ),
  is_error: optionalNullable(Schema.Boolean),
  cache_control: cacheControl
})

const Block = Schema.Union([TextBlock, ImageBlock, DocumentBlock, ToolUseBlock, ToolResultBlock, OtherBlock]).annotate(
  { expected: "a content block with a \"type\"" }
)

// `system` inside `messages`: the SDK allows it since 0.137 (docs/reference/anthropic-messages.md §2).
const Message = Schema.Struct({
  role: Schema.Literals(["user", "assistant", "system"]),
  content: Schema.Union([Schema.String, Schema.Array(Block)]).annotate({
    expected: "string or array of content blocks"
  })
})

const System = Schema.Union([Schema.String, Schema.Array(TextBlock.annotate({ expected: "a text block" }))]).annotate({
  expected: "string or array of text blocks"
})

const CustomTool = Schema.Struct({
  type: optionalNullable(Schema.Literal("custom")),
  name: Schema.String,
  description: optionalNullable(Schema.String),
  input_schema: Schema.Record(Schema.String, Schema.Unknown),
  strict: optionalNullable(Schema.Boolean),
  cache_control: cacheControl
})

/** The versioned `type` of a server or built-in tool (`web_search_20250305`, `bash_20250124`, …). */
export type ServerToolType = string & { readonly __serverTool: true }

const ServerTool = Schema.Struct({
  type: Schema.String.pipe(Schema.refine((type: string): type is ServerToolType => type !== "custom"))
})

export const isServerTool = (tool: WireTool): tool is typeof ServerTool.Type =>
  tool.type != null && tool.type !== "custom"

const Tool = Schema.Union([CustomTool, ServerTool]).annotate({ expected: "a tool" })

// One struct per `type` literal, so the union picks its member by it and an
// error names the field that is wrong (a union member with several literals
// would be reported instead).
const simpleToolChoice = <Type extends "auto" | "any" | "none">(type: Type) =>
  Schema.Struct({ type: Schema.Literal(type), disable_parallel_tool_use: optionalNullable(Schema.Boolean) })

const ToolChoice = Schema.Union([
  simpleToolChoice("auto"),
  simpleToolChoice("any"),
  simpleToolChoice("none"),
  Schema.Struct({
    type: Schema.Literal("tool"),
    name: Schema.String,
    disable_parallel_tool_use: optionalNullable(Schema.Boolean)
  })
]).annotate({ expected: "a tool choice of type \"auto\", \"any\", \"tool\" or \"none\"" })

/** Native structured output (`output_config.format`) and reasoning effort; other keys are kept unmapped. */
const OutputConfig = Schema.Struct({
  format: optionalNullable(
    Schema.Struct({ type: Schema.Literal("json_schema"), schema: Schema.Record(Schema.String, Schema.Unknown) }).annotate({
      expected: "an output format of type \"json_schema\" with a schema"
    })
  ),
  effort: optionalNullable(Schema.Literals(REASONING_EFFORTS))
})

export const MessagesRequest = Schema.Struct({
  model: Schema.String,
  max_tokens: Schema.Number,
  messages: Schema.Array(Message),
  system: optionalNullable(System),
  stop_sequences: optionalNullable(Schema.Array(Schema.String)),
  stream: optionalNullable(Schema.Boolean),
  temperature: optionalNullable(Schema.Number),
  top_p: optionalNullable(Schema.Number),
  top_k: optionalNullable(Schema.Number),
  tools: optionalNullable(Schema.Array(Tool)),
  tool_choice: optionalNullable(ToolChoice),
  metadata: optionalNullable(Schema.Struct({ user_id: optionalNullable(Schema.String) })),
  output_config: optionalNullable(OutputConfig)
})

export type MessagesRequest = typeof MessagesRequest.Type
export type WireBlock = typeof Block.Type
export type WireTextBlock = typeof TextBlock.Type
export type WireImageBlock = typeof ImageBlock.Type
export type WireDocumentBlock = typeof DocumentBlock.Type
export type WireToolResultBlock = typeof ToolResultBlock.Type
export type WireTool = typeof Tool.Type
export type WireCustomTool = typeof CustomTool.Type

/** Top-level fields the schema above maps; every other field goes to `unmapped`. */
export const MAPPED_FIELDS: ReadonlySet<string> = new Set(Object.keys(MessagesRequest.fields))

/** Validates a request body; a failure names the first offending field. */
export const decodeRequestBody = makeBodyDecoder(MessagesRequest)
