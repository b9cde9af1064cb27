/**
 * The fields OpenAI's published Responses schema requires, for what the
 * gateway builds: the Response object, its usage, its output items and their
 * parts, and the stream events that carry an item or a part. Taken from the
 * `openai` package's `resources/responses/responses.d.ts` (`Response`,
 * `ResponseUsage`, `ResponseOutputMessage`, `ResponseOutputText`,
 * `ResponseOutputRefusal`, `ResponseFunctionToolCall`, `ResponseReasoningItem`,
 * the `…Event` interfaces), plus `output_text.logprobs`, which the API always
 * sends and strict clients require. `output_text` on the Response is left out:
 * the SDK computes it.
 *
 * `schemaProblems` lists what is missing or of the wrong type; `[]` means valid.
 */

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

type Check = (value: unknown) => boolean
const string: Check = (value) => typeof value === "string"
const number: Check = (value) => typeof value === "number"
const boolean: Check = (value) => typeof value === "boolean"
const array: Check = Array.isArray
const nullable = (check: Check): Check => (value) => value === null || check(value)
const any: Check = (value) => value !== undefined
const literal = (expected: string): Check => (value) => value === expected

const RESPONSE: Record<string, Check> = {
  id: string,
  object: literal("response"),
  created_at: number,
  error: nullable(isObject),
  incomplete_details: nullable(isObject),
  instructions: nullable((value) => string(value) || array(value)),
  metadata: nullable(isObject),
  model: string,
  output: array,
  parallel_tool_calls: boolean,
  temperature: nullable(number),
  tool_choice: any,
  tools: array,
  top_p: nullable(number)
}

const USAGE: Record<string, Check> = {
  input_tokens: number,
  input_tokens_details: isObject,
  output_tokens: number,
  output_tokens_details: isObject,
  total_tokens: number
}

const ITEM_STATUS: Check = (value) => value === "in_progress" || value === "completed" || value === "incomplete"

const ITEMS: Record<string, Record<string, Check>> = {
  message: { id: string, type: literal("message"), role: literal("assistant"), status: ITEM_STATUS, content: array },
  function_call: { type: literal("function_call"), call_id: string, name: string, arguments: string },
  reasoning: { id: string, type: literal("reasoning"), summary: array, encrypted_content: (value) => value === undefined || nullable(string)(value) }
}

const PARTS: Record<string, Record<string, Check>> = {
  output_text: { type: literal("output_text"), text: string, annotations: array, logprobs: array },
  refusal: { type: literal("refusal"), refusal: string }
}

const fields = (value: unknown, shape: Record<string, Check>, path: string, problems: Array<string>): void => {
  if (!isObject(value)) {
    problems.push(`${path}: not an object`)
    return
  }
  for (const [name, check] of Object.entries(shape)) {
    if (!check(value[name])) problems.push(`${path}.${name}: ${value[name] === undefined ? "missing" : "wrong type"}`)
  }
}

const part = (value: unknown, path: string, problems: Array<string>): void => {
  const shape = isObject(value) ? PARTS[String(value.type)] : undefined
  if (shape === undefined) problems.push(`${path}: unknown content part`)
  else fields(value, shape, path, problems)
}

const item = (value: unknown, path: string, problems: Array<string>): void => {
  const shape = isObject(value) ? ITEMS[String(value.type)] : undefined
  if (shape === undefined) {
    problems.push(`${path}: unknown output item`)
    return
  }
  fields(value, shape, path, problems)
  const found = value as Json
  if (found.type === "message") (found.content as Array<unknown>).forEach((p, i) => part(p, `${path}.content[${i}]`, problems))
  if (found.type === "reasoning") {
    ;(found.summary as Array<unknown>).forEach((s, i) =>
      fields(s, { type: literal("summary_text"), text: string }, `${path}.summary[${i}]`, problems)
    )
  }
}

const response = (value: unknown, path: string, problems: Array<string>): void => {
  fields(value, RESPONSE, path, problems)
  if (!isObject(value)) return
  if (array(value.output)) (value.output as Array<unknown>).forEach((o, i) => item(o, `${path}.output[${i}]`, problems))
  if (value.usage !== undefined && value.usage !== null) {
    fields(value.usage, USAGE, `${path}.usage`, problems)
    const usage = value.usage as Json
    fields(usage.input_tokens_details, { cached_tokens: number, cache_write_tokens: number }, `${path}.usage.input_tokens_details`, problems)
    fields(usage.output_tokens_details, { reasoning_tokens: number }, `${path}.usage.output_tokens_details`, problems)
  }
}

/** Problems of a Response object, or of a stream event (its `response`, `item` or `part`). */
export const schemaProblems = (value: unknown): Array<string> => {
  const problems: Array<string> = []
  if (isObject(value) && typeof value.type === "string" && value.object === undefined) {
    const type = value.type
    if (isObject(value.response)) response(value.response, `${type}.response`, problems)
    if (value.item !== undefined) item(value.item, `${type}.item`, problems)
    if (value.part !== undefined) {
      if (type.startsWith("response.reasoning_summary_part.")) {
        fields(value.part, { type: literal("summary_text"), text: string }, `${type}.part`, problems)
      } else {
        part(value.part, `${type}.part`, problems)
      }
    }
    if (type === "response.output_text.delta" || type === "response.output_text.done") {
      if (!array(value.logprobs)) problems.push(`${type}.logprobs: missing`)
    }
    return problems
  }
  response(value, "response", problems)
  return problems
}
