/**
 * The few facts the log line and telemetry need from a chat response body
 * forwarded verbatim (model, finish reason, usage), read without parsing the
 * whole body: the body can be large (long answers, tool arguments) and the
 * caller already has it. Used by the fast path's tap, never to decide what
 * the caller sees.
 *
 * Why scanning is safe: inside a JSON string every `"` is escaped, so the
 * sequence `"key"` followed by `:` only occurs as an object key.
 */
import type { StopReason, Usage } from "../domain/chat.ts"
import type { WireFamily } from "../domain/sdk.ts"
import { readUsageCounts, stopReasonOfWire, usageOfCounts } from "./anthropic/mapping.ts"
import { decodeUsage, stopReasonOfFinish } from "./openai-chat/mapping.ts"

export interface ChatSummary {
  readonly model?: string | undefined
  readonly stopReason?: StopReason | undefined
  readonly usage?: Usage | undefined
}

const isSpace = (code: number) => code === 32 || code === 10 || code === 13 || code === 9

/** Index just after `"key"` + optional spaces + `:` + optional spaces, searching from `from` (or from the end). */
const valueStart = (text: string, key: string, last: boolean): number => {
  const needle = `"${key}"`
  let at = last ? text.lastIndexOf(needle) : text.indexOf(needle)
  while (at !== -1) {
    let i = at + needle.length
    while (isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) === 58) {
      i++
      while (isSpace(text.charCodeAt(i))) i++
      return i
    }
    at = last ? text.lastIndexOf(needle, at - 1) : text.indexOf(needle, at + 1)
  }
  return -1
}

const stringValue = (text: string, key: string): string | undefined => {
  const start = valueStart(text, key, false)
  if (start === -1 || text.charCodeAt(start) !== 34) return undefined
  const end = text.indexOf('"', start + 1)
  return end === -1 ? undefined : text.slice(start + 1, end)
}

/** The object value of the last `key` (usage comes last in both families), parsed alone. */
const objectValue = (text: string, key: string): unknown => {
  const start = valueStart(text, key, true)
  if (start === -1 || text.charCodeAt(start) !== 123) return undefined
  let depth = 0
  let inString = false
  for (let i = start; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 92) i++
      else if (code === 34) inString = false
    } else if (code === 34) {
      inString = true
    } else if (code === 123) {
      depth++
    } else if (code === 125 && --depth === 0) {
      try {
        return JSON.parse(text.slice(start, i + 1))
      } catch {
        return undefined
      }
    }
  }
  return undefined
}

export const summarizeChatJson = (family: WireFamily, text: string): ChatSummary => {
  if (family === "anthropic") {
    const reason = stringValue(text, "stop_reason")
    const counts = readUsageCounts(objectValue(text, "usage"))
    return {
      model: stringValue(text, "model"),
      stopReason: reason === undefined ? undefined : stopReasonOfWire(reason),
      usage: counts === undefined ? undefined : usageOfCounts(counts)
    }
  }
  const finish = stringValue(text, "finish_reason")
  return {
    model: stringValue(text, "model"),
    stopReason: finish === undefined ? undefined : stopReasonOfFinish(finish, false),
    usage: decodeUsage(objectValue(text, "usage"))
  }
}
