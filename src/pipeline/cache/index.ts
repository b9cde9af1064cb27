/** The response cache stage: the service, how a request uses it, its key and its entries. */
export { ResponseCache, redisKey } from "./ResponseCache.ts"
export type { CacheScope, MemoryStore } from "./ResponseCache.ts"
export { cacheKey, canonicalJson, credentialFingerprint } from "./key.ts"
export type { CacheKeyParts } from "./key.ts"
export { hitHeaders } from "./headers.ts"
export { cacheUse } from "./policy.ts"
export type { CacheSection, CacheUse } from "./policy.ts"
export type { CacheEntry, CachedBody, CachedChat } from "./entry.ts"
