/**
 * Wire schema of a Chat Completions request (docs/reference/openai-chat.md §2), as far as the
 * gateway reads it. Fields the canonical model has no home for are not
 * declared here: the decoder copies them to `unmapped` from the raw body.
 *
 * Built once at module level; `decodeRequestBody` is the only entry point.
 */
import { Schema } from "effect"
import { REASONING_EFFORTS } from "../../domain/chat.ts"
import { makeBodyDecoder } from "../body-decoder.ts"

const optionalNullable = <S extends Schema.Constraint>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })

const ImageUrlPart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: Schema.optionalKey(Schema.String) })
})

const InputAudioPart = Schema.Struct({ type: Schema.Literal("input_audio"), input_audio: Schema.Unknown })

const FilePart = Schema.Struct({
  type: Schema.Literal("file"),
  file: Schema.Struct({
    file_data: Schema.optionalKey(Schema.String),
    file_id: Schema.optionalKey(Schema.String),
    filename: Schema.optionalKey(Schema.String)
  })
})

const RefusalPart = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })

const TextContent = Schema.Union([
  Schema.String,
  Schema.Array(TextPart.annotate({ expected: "a text part" }))
]).annotate({ expected: "string or array of text parts" })

const UserContent = Schema.Union([
  Schema.String,
  Schema.Array(
    Schema.Union([TextPart, ImageUrlPart, InputAudioPart, FilePart]).annotate({
      expected: "a content part of type \"text\", \"image_url\", \"input_audio\" or \"file\""
    })
  )
]).annotate({ expected: "string or array of content parts" })

const AssistantContent = Schema.NullOr(
  Schema.Union([
    Schema.String,
    Schema.Array(
      Schema.Union([TextPart, RefusalPart]).annotate({ expected: "a content part of type \"text\" or \"refusal\"" })
    )
  ])
).annotate({ expected: "string, null or array of text parts" })

const FunctionToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.optionalKey(Schema.Literal("function")),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})

const CustomToolCall = Schema.Struct({ id: Schema.String, type: Schema.Literal("custom"), custom: Schema.Unknown })

// One struct per role: the union picks its member by the `role` literal, so an
// error names the field that is wrong rather than the role.
const instructionMessage = <Role extends "system" | "developer">(role: Role) =>
  Schema.Struct({ role: Schema.Literal(role), content: TextContent, name: Schema.optionalKey(Schema.String) })

const SystemMessage = instructionMessage("system")
const DeveloperMessage = instructionMessage("developer")

const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: UserContent,
  name: Schema.optionalKey(Schema.String)
})

const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.optionalKey(AssistantContent),
  refusal: optionalNullable(Schema.String),
  tool_calls: optionalNullable(
    Schema.Array(Schema.Union([FunctionToolCall, CustomToolCall]).annotate({ expected: "a tool call" }))
  ),
  name: Schema.optionalKey(Schema.String),
  audio: optionalNullable(Schema.Unknown),
  function_call: optionalNullable(Schema.Unknown)
})

const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  tool_call_id: Schema.String,
  content: TextContent
})

const FunctionMessage = Schema.Struct({ role: Schema.Literal("function"), name: Schema.String })

const Message = Schema.Union([SystemMessage, DeveloperMessage, UserMessage, AssistantMessage, ToolMessage, FunctionMessage]).annotate({
  expected: "a message with role \"system\", \"developer\", \"user\", \"assistant\" or \"tool\""
})

const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    description: optionalNullable(Schema.String),
    parameters: optionalNullable(Schema.Record(Schema.String, Schema.Unknown)),
    strict: optionalNullable(Schema.Boolean)
  })
})

const CustomTool = Schema.Struct({ type: Schema.Literal("custom"), custom: Schema.Unknown })

const NamedFunction = Schema.Struct({ name: Schema.String })

const ToolChoice = Schema.Union([
  Schema.Literals(["none", "auto", "required"]),
  Schema.Struct({ type: Schema.Literal("function"), function: NamedFunction }),
  Schema.Struct({
    type: Schema.Literal("allowed_tools"),
    allowed_tools: Schema.Struct({
      mode: Schema.Literals(["auto", "required"]),
      tools: Schema.Array(Schema.Struct({ function: Schema.optionalKey(NamedFunction) }))
    })
  }),
  Schema.Struct({ type: Schema.Literal("custom"), custom: Schema.Unknown })
]).annotate({ expected: "\"none\", \"auto\", \"required\" or a tool choice object" })

const ResponseFormat = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    json_schema: Schema.Struct({
      name: Schema.String,
      description: optionalNullable(Schema.String),
      schema: optionalNullable(Schema.Record(Schema.String, Schema.Unknown)),
      strict: optionalNullable(Schema.Boolean)
    })
  })
]).annotate({ expected: "a response format of type \"text\", \"json_object\" or \"json_schema\"" })

export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Message),
  max_completion_tokens: optionalNullable(Schema.Number),
  max_tokens: optionalNullable(Schema.Number),
  temperature: optionalNullable(Schema.Number),
  top_p: optionalNullable(Schema.Number),
  stop: optionalNullable(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  stream: optionalNullable(Schema.Boolean),
  stream_options: optionalNullable(Schema.Struct({ include_usage: optionalNullable(Schema.Boolean) })),
  tools: optionalNullable(
    Schema.Array(Schema.Union([FunctionTool, CustomTool]).annotate({ expected: "a tool of type \"function\"" }))
  ),
  tool_choice: optionalNullable(ToolChoice),
  parallel_tool_calls: optionalNullable(Schema.Boolean),
  response_format: optionalNullable(ResponseFormat),
  user: optionalNullable(Schema.String),
  safety_identifier: optionalNullable(Schema.String),
  reasoning_effort: optionalNullable(Schema.Literals(REASONING_EFFORTS))
})

export type ChatCompletionRequest = typeof ChatCompletionRequest.Type
export type WireMessage = typeof Message.Type
export type WireUserPart = Exclude<typeof UserMessage.Type["content"], string>[number]
export type WireTool = typeof FunctionTool.Type | typeof CustomTool.Type
export type WireToolChoice = typeof ToolChoice.Type

/** Top-level fields the schema above maps; every other field goes to `unmapped`. */
export const MAPPED_FIELDS: ReadonlySet<string> = new Set(Object.keys(ChatCompletionRequest.fields))

/** Validates a request body; a failure names the first offending field. */
export const decodeRequestBody = makeBodyDecoder(ChatCompletionRequest)
