/**
 * Log lines for people (`[telemetry] log_format = "pretty"`, or `"auto"` on a
 * terminal): one line per record, the request line first of all:
 *
 *   10:42:07.118 INFO  POST /v1/chat/completions 200 182.4ms smart → openai gpt-4o-mini tokens 11→7 cache miss  #3f2a…
 *
 * Details
 * - Time of day (UTC), level, then for a request: method, path, status,
 *   duration, the model asked for, the provider and model that answered,
 *   tokens, cache, the error code, the attempts when more than one, and the
 *   request id's first characters; any other record: its message and its
 *   fields as `key=value`.
 * - Colours (ANSI) only when asked for: status by class, level by severity,
 *   errors in red; `NO_COLOR` in the environment turns them off.
 * - The same fields as the JSON line, so nothing secret can appear here that
 *   could not appear there.
 */

const RESET = "\u001b[0m"
const DIM = "\u001b[2m"
const RED = "\u001b[31m"
const GREEN = "\u001b[32m"
const YELLOW = "\u001b[33m"
const CYAN = "\u001b[36m"
const BOLD = "\u001b[1m"

type Paint = (code: string, text: string) => string

const painter = (colour: boolean): Paint => (colour ? (code, text) => `${code}${text}${RESET}` : (_code, text) => text)

const LEVEL_COLOUR: Readonly<Record<string, string>> = { trace: DIM, debug: DIM, info: CYAN, warn: YELLOW, error: RED, fatal: RED }

const statusColour = (status: number): string => (status >= 500 ? RED : status >= 400 ? YELLOW : GREEN)

/** A field's value as text: bare when it has no spaces or quotes, else JSON. */
const valueText = (value: unknown): string => {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)
  return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)
}

type Fields = Readonly<Record<string, unknown>>

/** The parts of a request line, each present only when the request had it. */
const requestParts = (fields: Fields, paint: Paint): Array<string> => {
  const parts: Array<string> = [`${fields.method ?? ""} ${fields.path ?? ""}`]
  const status = typeof fields.status === "number" ? fields.status : 0
  parts.push(paint(BOLD + statusColour(status), String(status)))
  if (typeof fields.duration_ms === "number") parts.push(`${fields.duration_ms.toFixed(1)}ms`)
  const answered = [fields.provider, fields.upstream_model].filter((part) => part !== undefined).join(" ")
  if (fields.model !== undefined) parts.push(answered === "" ? String(fields.model) : `${fields.model} → ${answered}`)
  else if (answered !== "") parts.push(`→ ${answered}`)
  if (fields.stream === true) parts.push("stream")
  if (typeof fields.input_tokens === "number") parts.push(`tokens ${fields.input_tokens}→${fields.output_tokens ?? 0}`)
  if (fields.cache !== undefined) parts.push(`cache ${fields.cache}`)
  if (typeof fields.attempts === "number" && fields.attempts > 1) parts.push(`attempts ${fields.attempts}`)
  if (fields.error_code !== undefined) parts.push(paint(RED, String(fields.error_code)))
  if (fields.guardrail !== undefined) parts.push(paint(RED, `guardrail ${fields.guardrail}`))
  if (fields.aborted === true) parts.push(paint(YELLOW, "aborted"))
  if (typeof fields.request_id === "string") parts.push(paint(DIM, `#${fields.request_id.slice(0, 8)}`))
  return parts
}

/** One record as a line for people (without the newline). */
export const prettyLine = (isoTime: string, level: string, worker: number | undefined, msg: string, fields: Fields | undefined, colour: boolean): string => {
  const paint = painter(colour)
  const head = `${paint(DIM, isoTime.slice(11, 23))} ${paint(LEVEL_COLOUR[level] ?? "", level.toUpperCase().padEnd(5))}${worker === undefined ? "" : paint(DIM, ` w${worker}`)}`
  if (msg === "request" && fields !== undefined) return `${head} ${requestParts(fields, paint).join(" ")}`
  const rest = fields === undefined ? [] : Object.entries(fields).filter(([, value]) => value !== undefined).map(([key, value]) => `${paint(DIM, `${key}=`)}${valueText(value)}`)
  return [head, msg, ...rest].join(" ")
}
