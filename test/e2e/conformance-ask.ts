/**
 * What the conformance suite (conformance.test.ts) asks and gets back, in
 * caller-neutral terms: each caller (an official SDK, the AI SDK) says an
 * `Ask` in its own API and reads its answer back as an `Answer`.
 */

/** A conversation in caller-neutral terms. */
export interface Turn {
  readonly role: "user" | "assistant" | "tool"
  readonly text?: string
  readonly image?: { readonly mediaType: string; readonly base64: string } | { readonly url: string }
  readonly toolCalls?: ReadonlyArray<ToolCall>
  readonly toolCallId?: string
}

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly args: Record<string, unknown>
}

/** What a caller's SDK parsed, in caller-neutral terms. */
export interface Answer {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly finish: "stop" | "tool" | "length"
  readonly outputTokens: number | undefined
  readonly reasoningItems: number
}

export interface Ask {
  readonly turns: ReadonlyArray<Turn>
  readonly tools?: boolean
  readonly jsonSchema?: Record<string, unknown>
  readonly reasoning?: boolean
}

export const WEATHER = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
export const TOOL_NAMES = ["get_weather", "get_time"] as const

export const argsOf = (text: string): Record<string, unknown> => (text === "" ? {} : JSON.parse(text))
