/**
 * What is scanned of each request, read from its parsed JSON body: every piece
 * of text a model would read. Not scanned (opaque by design): transcription
 * audio, file uploads and downloads, native passthrough bodies.
 *
 * Each extractor calls `visit` once per text piece and stops as soon as it
 * returns true (a violation was found); pieces are scanned separately, so a
 * term or a number split across two pieces is not joined up.
 */

/** The request formats and endpoints whose text is scanned. */
export type Surface =
  | "chat_completions"
  | "messages"
  | "responses"
  | "embeddings"
  | "image_generation"
  | "audio_speech"
  | "count_tokens"
  | "rerank"

export type Visit = (text: string) => boolean

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A string, or the text of content parts (`text`, `input_text`, `output_text`, refusals, tool results, text documents). */
const content = (value: unknown, visit: Visit): boolean => {
  if (typeof value === "string") return visit(value)
  if (!Array.isArray(value)) return false
  for (const part of value) {
    if (typeof part === "string") {
      if (visit(part)) return true
      continue
    }
    if (!isRecord(part)) continue
    if (typeof part.text === "string" && visit(part.text)) return true
    if (typeof part.refusal === "string" && visit(part.refusal)) return true
    // Anthropic tool results, and Responses function outputs given as parts.
    if (part.content !== undefined && content(part.content, visit)) return true
    if (part.output !== undefined && content(part.output, visit)) return true
    // A plain-text document (Anthropic `document` with a `text` source).
    if (isRecord(part.source) && part.source.type === "text" && typeof part.source.data === "string" && visit(part.source.data)) return true
  }
  return false
}

const messages = (value: unknown, visit: Visit): boolean => {
  if (!Array.isArray(value)) return false
  for (const message of value) {
    if (!isRecord(message)) continue
    if (content(message.content, visit)) return true
    if (typeof message.refusal === "string" && visit(message.refusal)) return true
  }
  return false
}

/** Responses `input`: a string, or items (messages with parts, function call outputs). */
const responsesInput = (value: unknown, visit: Visit): boolean => {
  if (typeof value === "string") return visit(value)
  if (!Array.isArray(value)) return false
  for (const item of value) {
    if (!isRecord(item)) continue
    if (item.content !== undefined && content(item.content, visit)) return true
    if (item.type === "function_call_output" && content(item.output, visit)) return true
  }
  return false
}

const strings = (value: unknown, visit: Visit): boolean => {
  if (typeof value === "string") return visit(value)
  if (!Array.isArray(value)) return false
  // Embeddings may be token ids (numbers): not text.
  for (const item of value) if (typeof item === "string" && visit(item)) return true
  return false
}

/** Rerank documents: strings, or `{text}` objects (Cohere v2). */
const documents = (value: unknown, visit: Visit): boolean => {
  if (!Array.isArray(value)) return false
  for (const item of value) {
    if (typeof item === "string") {
      if (visit(item)) return true
    } else if (isRecord(item) && typeof item.text === "string" && visit(item.text)) {
      return true
    }
  }
  return false
}

/** Calls `visit` on every text piece of a request body; true as soon as one visit returned true. */
export const visitText = (surface: Surface, json: Readonly<Record<string, unknown>>, visit: Visit): boolean => {
  switch (surface) {
    case "chat_completions":
      return messages(json.messages, visit)
    case "messages":
    case "count_tokens":
      return content(json.system, visit) || messages(json.messages, visit)
    case "responses":
      return (typeof json.instructions === "string" && visit(json.instructions)) || responsesInput(json.input, visit)
    case "embeddings":
      return strings(json.input, visit)
    case "image_generation":
      return typeof json.prompt === "string" && visit(json.prompt)
    case "audio_speech":
      return (typeof json.input === "string" && visit(json.input)) || (typeof json.instructions === "string" && visit(json.instructions))
    case "rerank":
      return (typeof json.query === "string" && visit(json.query)) || documents(json.documents, visit)
  }
}
