/**
 * A Redis URL as a log may show it. A URL's password must never reach a log:
 * `shown` replaces it, `target` is host and port alone, and `scrub` removes
 * the password from any error text that might repeat it. No Redis client is
 * loaded here (a gateway without Redis imports this too).
 */
export interface RedisLogTarget {
  /** The URL with its password replaced by `redacted`. */
  readonly shown: string
  /** `host:port`. */
  readonly target: string
  readonly scrub: (text: string) => string
}

export const redisLogTarget = (url: string): RedisLogTarget => {
  try {
    const parsed = new URL(url)
    const target = `${parsed.hostname}:${parsed.port === "" ? "6379" : parsed.port}`
    if (parsed.password === "") return { shown: parsed.href, target, scrub: (text) => text }
    const password = decodeURIComponent(parsed.password)
    parsed.password = "redacted"
    return { shown: parsed.href, target, scrub: (text) => text.split(password).join("redacted") }
  } catch {
    return { shown: "<unparsable url>", target: "(unparsable redis URL)", scrub: (text) => text }
  }
}
