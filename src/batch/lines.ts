/**
 * Reading a JSONL file as a stream of lines, with backpressure (the file is
 * read only as fast as lines are taken), and the output file's state for a
 * resumed job.
 */
import { createReadStream, existsSync, openSync, readSync, closeSync, ftruncateSync, fstatSync } from "node:fs"

export interface Line {
  /** 1-based. */
  readonly number: number
  readonly text: string
}

/** The non-empty lines of a file, read as they are taken (CRLF or LF ends). */
export async function* readLines(path: string): AsyncGenerator<Line> {
  const decoder = new TextDecoder()
  let carry = ""
  let number = 0
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) {
    const text = carry + decoder.decode(chunk as Buffer, { stream: true })
    let start = 0
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      number++
      const line = text.slice(start, end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end)
      start = end + 1
      if (line.trim() !== "") yield { number, text: line }
    }
    carry = text.slice(start)
  }
  carry += decoder.decode()
  if (carry.trim() !== "") yield { number: number + 1, text: carry }
}

/** How many lines a file has (newlines counted on bytes; a last line without one counts too). */
export const countLines = async (path: string): Promise<number> => {
  let count = 0
  let last = 10
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    const bytes = chunk as Buffer
    for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) count++
    if (bytes.length > 0) last = bytes[bytes.length - 1]
  }
  return last === 10 ? count : count + 1
}

/**
 * Makes an existing output file end with a whole line: a job killed in the
 * middle of a write leaves a partial last line, which is cut off (its request
 * is run again). Returns whether the file exists.
 */
export const repairOutput = (path: string): boolean => {
  if (!existsSync(path)) return false
  const fd = openSync(path, "r+")
  try {
    const size = fstatSync(fd).size
    if (size === 0) return true
    const window = Buffer.alloc(64 * 1024)
    let end = size
    // Find the last newline, reading backwards in windows.
    while (end > 0) {
      const start = Math.max(0, end - window.length)
      const read = readSync(fd, window, 0, end - start, start)
      const at = window.subarray(0, read).lastIndexOf(10)
      if (at !== -1) {
        if (start + at + 1 !== size) ftruncateSync(fd, start + at + 1)
        return true
      }
      end = start
    }
    ftruncateSync(fd, 0)
    return true
  } finally {
    closeSync(fd)
  }
}
