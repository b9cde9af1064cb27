/** What a response tells about the cache: `x-gw-cache` (hit or miss), and a hit's age and provider. */
import type { CacheEntry } from "./entry.ts"

/** The headers of a hit: its status, its age in seconds, the provider that answered. */
export const hitHeaders = (entry: CacheEntry): Record<string, string> => ({
  "x-gw-cache": "hit",
  "x-gw-cache-age": String(Math.max(0, Math.floor((Date.now() - entry.storedAt) / 1000))),
  "x-gw-upstream-provider": entry.provider
})
