/**
 * Multi-tenant mode's public face: the tenant store (live on Redis, or over a
 * map in tests), request selection and snapshot sealing. The operator CLI
 * (cli.ts) is loaded by main.ts on demand.
 */
export type { SnapshotIdentity, TenantLog, TenantStore } from "./contracts.ts"
export { openSnapshot } from "./open-snapshot.ts"
export { generateKeyPair, privateKeyFromBytes, publicKeyFromBytes, seal } from "./sealing.ts"
export { environmentsKey, tenantFromRequest, tenantId } from "./selection.ts"
export type { TenantId } from "./selection.ts"
export { makeTenantStore, makeTenantStoreFromSnapshots } from "./store.ts"
export type { TenantStoreOptions } from "./store.ts"
