/**
 * The `[responses]` section settled and checked: the Responses API's store
 * (src/pipeline/responses/ResponseStore.ts) with its `url` and
 * `encrypt_salt` taken from the `[cache]` table when unset, whether or not
 * the cache itself is on.
 *
 * Details
 * - A store that is on needs a salt (its own or the cache's), as the cache
 *   does: entries are always encrypted, per caller and project.
 * - A URL is never echoed in a finding: it may carry a password.
 */
import type { ConfigFile } from "./schema.ts"

/** The store's settings with nothing left to default. */
export interface ResponsesSection {
  readonly enabled: boolean
  readonly url: string
  readonly encrypt_salt: string
  readonly store_ttl_seconds: number
  readonly max_entry_size_bytes: number
  readonly pool_size: number
  readonly timeout_ms: number
}

interface Findings {
  error(path: string, message: string): void
}

/** `[responses]` with `url` and `encrypt_salt` defaulted to the `[cache]` table's. */
export const responsesSectionOf = (file: ConfigFile): ResponsesSection => ({
  ...file.responses,
  url: file.responses.url ?? file.cache.url,
  encrypt_salt: file.responses.encrypt_salt ?? file.cache.encrypt_salt
})

/** Refuses a store that is on without a Redis URL or without a salt. */
export const checkResponses = (file: ConfigFile, findings: Findings, isRedisUrl: (url: string) => boolean): void => {
  if (!file.responses.enabled) return
  const section = responsesSectionOf(file)
  if (!isRedisUrl(section.url)) {
    findings.error(file.responses.url === undefined ? "cache.url" : "responses.url", "expected a redis:// or rediss:// URL with a host, or a cluster's redis+cluster://host:port,host:port (the Responses store's)")
  }
  if (section.encrypt_salt === "") {
    findings.error("responses.encrypt_salt", "must be non-empty when responses.enabled = true (set it, or cache.encrypt_salt): stored responses are always encrypted")
  }
}
