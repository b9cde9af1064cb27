/**
 * Wire schema of a Responses request (docs/reference/openai-other.md §7.1), as far as the
 * gateway reads it. Fields the canonical model has no home for are not
 * declared here: the decoder copies them to `unmapped` from the raw body.
 *
 * Input items, tools and tool choices of types the canonical model does not
 * know (`item_reference`, `web_search`, …) are accepted as
 * `Other…` members so they can be reported as dropped; items of a known type
 * are validated.
 *
 * Built once at module level; `decodeRequestBody` is the only entry point.
 */
import { Schema } from "effect"
import { makeBodyDecoder } from "../body-decoder.ts"

const optionalNullable = <S extends Schema.Constraint>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const InputText = Schema.Struct({ type: Schema.Literal("input_text"), text: Schema.String })

const OutputText = Schema.Struct({ type: Schema.Literal("output_text"), text: Schema.String })

const Refusal = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })

const InputImage = Schema.Struct({
  type: Schema.Literal("input_image"),
  image_url: optionalNullable(Schema.String),
  file_id: optionalNullable(Schema.String),
  detail: optionalNullable(Schema.String)
})

const InputFile = Schema.Struct({
  type: Schema.Literal("input_file"),
  file_data: optionalNullable(Schema.String),
  file_id: optionalNullable(Schema.String),
  file_url: optionalNullable(Schema.String),
  filename: optionalNullable(Schema.String)
})

const ContentPart = Schema.Union([InputText, OutputText, Refusal, InputImage, InputFile]).annotate({
  expected: "a content part of type \"input_text\", \"input_image\", \"input_file\", \"output_text\" or \"refusal\""
})

// `type: "message"` is optional on a message item ("easy input message").
const MessageItem = Schema.Struct({
  type: Schema.optionalKey(Schema.Literal("message")),
  role: Schema.Literals(["user", "assistant", "system", "developer"]),
  content: Schema.Union([Schema.String, Schema.Array(ContentPart)]).annotate({
    expected: "string or array of content parts"
  })
})

const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})

const FunctionCallOutputItem = Schema.Struct({
  type: Schema.Literal("function_call_output"),
  call_id: Schema.String,
  output: Schema.Union([
    Schema.String,
    Schema.Array(
      Schema.Union([InputText, InputImage, InputFile]).annotate({
        expected: "an output part of type \"input_text\", \"input_image\" or \"input_file\""
      })
    )
  ]).annotate({ expected: "string or array of output parts" })
})

// Earlier reasoning sent back; `summary` is optional here because these items were accepted (and dropped) before they were read.
const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  summary: Schema.optionalKey(Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.String }))),
  encrypted_content: optionalNullable(Schema.String)
})

const KNOWN_ITEM_TYPES: ReadonlySet<string> = new Set(["message", "function_call", "function_call_output", "reasoning"])

/** The `type` of an input item the canonical model has no home for (`item_reference`, …). */
export type OtherItemType = string & { readonly __otherItem: true }

const OtherItem = Schema.Struct({
  type: Schema.String.pipe(Schema.refine((type: string): type is OtherItemType => !KNOWN_ITEM_TYPES.has(type)))
})

const InputItem = Schema.Union([FunctionCallItem, FunctionCallOutputItem, ReasoningItem, MessageItem, OtherItem]).annotate({
  expected: "an input item: a message with role \"user\", \"assistant\", \"system\" or \"developer\", " +
    "or an item of type \"function_call\", \"function_call_output\" or \"reasoning\""
})

// Function tools are flat here: no inner `function` object as in Chat Completions.
const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: optionalNullable(Schema.String),
  parameters: optionalNullable(JsonObject),
  strict: optionalNullable(Schema.Boolean)
})

/** The `type` of a built-in tool (`web_search`, `file_search`, `mcp`, …). */
export type BuiltInToolType = string & { readonly __builtInTool: true }

const BuiltInTool = Schema.Struct({
  type: Schema.String.pipe(Schema.refine((type: string): type is BuiltInToolType => type !== "function"))
})

const Tool = Schema.Union([FunctionTool, BuiltInTool]).annotate({ expected: "a tool" })

/** The `type` of a tool choice naming a built-in tool (`web_search_preview`, `mcp`, `custom`, …). */
export type OtherToolChoiceType = string & { readonly __otherToolChoice: true }

const ToolChoice = Schema.Union([
  Schema.Literals(["none", "auto", "required"]),
  Schema.Struct({ type: Schema.Literal("function"), name: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("allowed_tools"),
    mode: Schema.Literals(["auto", "required"]),
    tools: Schema.Array(Schema.Struct({ type: Schema.String, name: Schema.optionalKey(Schema.String) }))
  }),
  Schema.Struct({
    type: Schema.String.pipe(
      Schema.refine((type: string): type is OtherToolChoiceType => type !== "function" && type !== "allowed_tools")
    )
  })
]).annotate({ expected: "\"none\", \"auto\", \"required\" or a tool choice object" })

// The JSON-schema form is flat here, unlike Chat's `response_format.json_schema`.
const TextFormat = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    name: Schema.String,
    schema: JsonObject,
    description: optionalNullable(Schema.String),
    strict: optionalNullable(Schema.Boolean)
  })
]).annotate({ expected: "a text format of type \"text\", \"json_object\" or \"json_schema\"" })

export const ResponsesRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.Union([Schema.String, Schema.Array(InputItem)]).annotate({
    expected: "string or array of input items"
  }),
  instructions: optionalNullable(Schema.String),
  max_output_tokens: optionalNullable(Schema.Number),
  temperature: optionalNullable(Schema.Number),
  top_p: optionalNullable(Schema.Number),
  stream: optionalNullable(Schema.Boolean),
  tools: optionalNullable(Schema.Array(Tool)),
  tool_choice: optionalNullable(ToolChoice),
  parallel_tool_calls: optionalNullable(Schema.Boolean),
  text: optionalNullable(Schema.Struct({ format: optionalNullable(TextFormat) })),
  user: optionalNullable(Schema.String),
  safety_identifier: optionalNullable(Schema.String)
})

export type ResponsesRequest = typeof ResponsesRequest.Type
export type WireInputItem = typeof InputItem.Type
export type WireContentPart = typeof ContentPart.Type
export type WireMessageItem = typeof MessageItem.Type
export type WireReasoningItem = typeof ReasoningItem.Type
export type WireOutputPart = Exclude<typeof FunctionCallOutputItem.Type["output"], string>[number]
export type WireTool = typeof Tool.Type
export type WireToolChoice = typeof ToolChoice.Type
export type WireTextFormat = typeof TextFormat.Type

export const isOtherItem = (item: WireInputItem): item is typeof OtherItem.Type =>
  item.type !== undefined && !KNOWN_ITEM_TYPES.has(item.type)

/** Top-level fields the schema above maps; every other field goes to `unmapped`. */
export const MAPPED_FIELDS: ReadonlySet<string> = new Set(Object.keys(ResponsesRequest.fields))

/** Validates a request body; a failure names the first offending field. */
export const decodeRequestBody = makeBodyDecoder(ResponsesRequest)
