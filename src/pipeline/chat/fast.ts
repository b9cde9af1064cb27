/**
 * The fast path's tap (caller and provider speak the same wire family, spec
 * 6.1.3): the body goes to the caller byte for byte (`forwardVerbatim`), and
 * this tap decodes a copy after each chunk was written, for the log line,
 * telemetry and the output guardrail; it never delays a chunk.
 */
import type { StreamError, WireFamily } from "../../domain/index.ts"
import { PROVIDER_CODECS } from "../../formats/index.ts"
import { summarizeChatJson } from "../../formats/summary.ts"
import { SseParser } from "../../providers/sse.ts"
import type { BodyTap } from "../forward/index.ts"
import type { ResponseCollector } from "./collector.ts"

const JSON_TAP_LIMIT = 4 * 1024 * 1024

/** A tap that decodes a forwarded chat body into the collector. */
export const chatTap = (family: WireFamily, sse: boolean, collector: ResponseCollector): BodyTap => {
  const codec = PROVIDER_CODECS[family]
  if (sse) {
    const parser = new SseParser()
    const decoder = codec.streamDecoder()
    const feed = (events: ReadonlyArray<{ readonly event?: string | undefined; readonly data: string }>) => {
      for (const event of events) for (const decoded of decoder.push(event)) collector.event(decoded)
    }
    return {
      chunk: (chunk: Uint8Array) => feed(parser.push(chunk)),
      end: () => {
        feed(parser.end())
        let cut: StreamError | undefined
        for (const decoded of decoder.end()) {
          collector.event(decoded)
          if (decoded.type === "error") cut = decoded.error
        }
        return cut
      }
    }
  }
  const chunks: Array<Uint8Array> = []
  let size = 0
  return {
    chunk: (chunk: Uint8Array) => {
      size += chunk.byteLength
      if (size <= JSON_TAP_LIMIT) chunks.push(chunk)
    },
    end: () => {
      if (size > JSON_TAP_LIMIT) return undefined
      const body = chunks.length === 1 ? Buffer.from(chunks[0].buffer, chunks[0].byteOffset, chunks[0].byteLength) : Buffer.concat(chunks)
      collector.summary(summarizeChatJson(family, body.toString("utf8")))
      return undefined
    }
  }
}

