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
