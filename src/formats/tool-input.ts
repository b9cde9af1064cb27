/**
 * Tool-call arguments (JSON text, as the canonical model keeps them) as the
 * object the object-typed wire fields want (Anthropic `tool_use.input`, Gemini
 * `functionCall.args`, Bedrock `toolUse.input`): `{}` when they are empty,
 * invalid JSON or not an object (LiteLLM parses the same way). Shared by the
 * families so they agree.
 */
export const toolInput = (args: string): Record<string, unknown> => {
  if (args.trim() === "") return {}
  try {
    const value: unknown = JSON.parse(args)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
  } catch {
    return {}
  }
}
