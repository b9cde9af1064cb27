/** The Responses API's state: the store of responses by id, and what it keeps per response. */
export { claimKey, ResponseStore, responseRedisKey, storeKey } from "./ResponseStore.ts"
export type { ResponseScope } from "./ResponseStore.ts"
export { decodeStored, encodeStored } from "./entry.ts"
export type { StoredItem, StoredResponse } from "./entry.ts"
export { conversationOf, inputItemsOf, resolveRequest, stateNeeds, storedResponseOf } from "./resolve.ts"
export type { ResolvedRequest, StateNeeds, StateRefusal, StoredState } from "./resolve.ts"
