/**
 * Validating a wire request body with its Effect Schema, with a failure that
 * names the first offending field the way the caller wrote it
 * (`messages[2].content: expected …`) and that field alone as `param`.
 * Shared by every wire family's request decoder; built once per schema.
 */
import { Result, Schema, SchemaIssue } from "effect"
import type { DecodeFailure } from "./contract.ts"

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1()

/** `["messages", 2, "content"]` → `messages[2].content`. */
export const pathText = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string => {
  let text = ""
  for (const segment of path) {
    const key = typeof segment === "object" ? segment.key : segment
    text += typeof key === "number" ? `[${key}]` : text === "" ? String(key) : `.${String(key)}`
  }
  return text
}

const describe = (message: string): string =>
  message === "Missing key" ? "required field is missing" : message.charAt(0).toLowerCase() + message.slice(1)

export const makeBodyDecoder = <S extends Schema.Decoder<unknown>>(schema: S): (body: unknown) => Result.Result<S["Type"], DecodeFailure> => {
  const decode = Schema.decodeUnknownResult(schema)
  return (body) => {
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return Result.fail({ message: "request body must be a JSON object" })
    }
    const result = decode(body)
    if (Result.isSuccess(result)) return result
    const issue = formatIssue(result.failure.issue).issues[0]
    const param = pathText(issue?.path ?? [])
    const message = describe(issue?.message ?? "invalid value")
    return param === "" ? Result.fail({ message }) : Result.fail({ message: `${param}: ${message}`, param })
  }
}
