/** Test helpers: SSE text ⇄ events, and running decoders and encoders over whole streams. */
import type { ChatStreamEvent } from "../../src/domain/chat.ts"
import type { SseEvent, StreamDecoder, StreamEncoder } from "../../src/formats/index.ts"

/** Splits SSE text into events (`event:` name, `data:` lines joined with `\n`). */
export const parseSse = (text: string): Array<SseEvent> =>
  text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      let event: string | undefined
      const data: Array<string> = []
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      return event === undefined ? { data: data.join("\n") } : { event, data: data.join("\n") }
    })

/** Feeds every event, then EOF. */
export const decodeAll = (decoder: StreamDecoder, events: ReadonlyArray<SseEvent>): Array<ChatStreamEvent> => [
  ...events.flatMap((event) => decoder.push(event)),
  ...decoder.end()
]

export const encodeAll = (encoder: StreamEncoder, events: ReadonlyArray<ChatStreamEvent>): string =>
  events.map((event) => encoder.push(event)).join("")

/** One OpenAI chunk as an SSE event. */
export const chunk = (json: unknown): SseEvent => ({ data: JSON.stringify(json) })

/** One Anthropic event as an SSE event (name taken from its `type`). */
export const anthropicEvent = (json: { type: string } & Record<string, unknown>): SseEvent => ({
  event: json.type,
  data: JSON.stringify(json)
})
