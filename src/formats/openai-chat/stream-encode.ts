/**
 * Canonical stream events → Chat Completions SSE frames (docs/reference/translation.md §9).
 *
 * A role chunk first; text and tool-call fragments as they come; one finish
 * chunk with `delta: {}`; then, only when the caller asked for
 * `stream_options.include_usage`, a usage chunk with `choices: []`; then
 * `data: [DONE]`. Usage is held until `message_stop` so the usage chunk always
 * follows the finish chunk, whichever order the upstream reported them in.
 *
 * An `error` event becomes the `data: {"error":…}` frame in the caller's
 * vocabulary and ends the stream; so does a `message_stop` that came without
 * a finish (a cut-off stream must not look complete).
 *
 * Hot path: the chunk envelope (`id`, `created`, `model`) is serialized once;
 * each frame is that prefix plus the serialized delta.
 */
import type { ChatStreamEvent, StreamError, Usage } from "../../domain/chat.ts"
import { streamErrorFrame } from "../../domain/envelope.ts"
import { classifyStreamError } from "../../domain/errors.ts"
import type { StreamEncoder } from "../contract.ts"
import { completionId, encodeUsage, finishReasonOf } from "./mapping.ts"

export interface OpenAiStreamEncodeOptions {
  /** Whether the caller asked for the usage chunk (`stream_options.include_usage`). */
  readonly includeUsage: boolean
  /** Model name to show the caller instead of the upstream's. */
  readonly model?: string | undefined
}

const TRUNCATED: StreamError = {
  type: "server_error",
  message: "upstream stream ended before a finish reason",
  status: 502
}

const errorFrame = (error: StreamError): string =>
  streamErrorFrame("openai", classifyStreamError(error), error.message, error.status ?? 500)

const envelope = (id: string, created: number, model: string): string =>
  `{"id":${JSON.stringify(completionId(id))},"object":"chat.completion.chunk","created":${created},"model":${
    JSON.stringify(model)
  },"choices":`

export const makeOpenAiChatStreamEncoder = (options: OpenAiStreamEncodeOptions): StreamEncoder => {
  // Replaced by `message_start`; only used if an upstream skipped it.
  let head = envelope("", Math.floor(Date.now() / 1000), options.model ?? "")
  let started = false
  let finished = false
  let done = false
  let usage: Usage | undefined

  const chunk = (delta: string, finishReason = "null"): string =>
    `data: ${head}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finishReason}}]}\n\n`

  const end = (frame: string): string => {
    done = true
    return frame
  }

  const body = (event: ChatStreamEvent): string => {
    switch (event.type) {
      case "message_start":
        head = envelope(event.id, event.created, options.model ?? event.model)
        if (event.usage !== undefined) usage = event.usage
        return chunk(`{"role":"assistant","content":""}`)
      case "text_delta":
        return event.text === "" ? "" : chunk(`{"content":${JSON.stringify(event.text)}}`)
      case "tool_call_start":
        return chunk(
          `{"tool_calls":[{"index":${event.index},"id":${JSON.stringify(event.id)},"type":"function","function":{"name":${
            JSON.stringify(event.name)
          },"arguments":""}}]}`
        )
      case "tool_call_delta":
        return event.argumentsDelta === ""
          ? ""
          : chunk(`{"tool_calls":[{"index":${event.index},"function":{"arguments":${
            JSON.stringify(event.argumentsDelta)
          }}}]}`)
      case "message_delta":
        if (finished) return ""
        finished = true
        return chunk("{}", `"${finishReasonOf(event.stopReason)}"`)
      case "other_content":
      case "reasoning_delta":
      case "reasoning_signature":
      case "reasoning_redacted":
        return ""
      case "usage":
        usage = event.usage
        return ""
      case "message_stop": {
        if (!finished) return end(errorFrame(TRUNCATED))
        const usageChunk = options.includeUsage && usage !== undefined
          ? `data: ${head}[],"usage":${JSON.stringify(encodeUsage(usage))}}\n\n`
          : ""
        return end(`${usageChunk}data: [DONE]\n\n`)
      }
      case "error":
        return end(errorFrame(event.error))
    }
  }

  return {
    push(event: ChatStreamEvent): string {
      if (done) return ""
      if (!started && event.type !== "error") {
        started = true
        if (event.type !== "message_start") return chunk(`{"role":"assistant","content":""}`) + body(event)
      }
      return body(event)
    }
  }
}
