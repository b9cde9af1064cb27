/** An SSE event's data as the stream decoders read it: per event, on their hot path. */

/**
 * `text.trim()` without its copy when there is nothing to trim (an event's
 * data almost never has white space around it): per event on the stream
 * decoders' hot path.
 */
export const trimmed = (text: string): string => {
  if (text.length === 0) return text
  const first = text.charCodeAt(0)
  const last = text.charCodeAt(text.length - 1)
  // Printable ASCII at both ends is not white space; anything else, `trim` decides.
  return first > 32 && first < 127 && last > 32 && last < 127 ? text : text.trim()
}

/**
 * The event's data as a JSON object; undefined when it does not parse or is
 * not an object (the decoder's malformed chunk).
 */
export const eventObject = (data: string): Record<string, unknown> | undefined => {
  let value: unknown
  try {
    value = JSON.parse(data)
  } catch {
    return undefined
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}
