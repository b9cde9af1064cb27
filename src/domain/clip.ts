/**
 * Caller-supplied text echoed back (in an error message, a header, a log
 * line) is cut to a bound, so a 10 MB `model` or a 200 KB key name cannot
 * become a 10 MB error body, an oversized header or a giant log line.
 */
export const ECHO_LIMIT = 1024

/** `value` itself when short; else its first `max` characters and how many more there were. */
export const clip = (value: string, max: number = ECHO_LIMIT): string =>
  value.length <= max ? value : `${value.slice(0, max)}… (${value.length - max} more characters)`
