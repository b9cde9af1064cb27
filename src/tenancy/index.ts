/**
 * Multi-tenant mode's public face: the tenant store (live on Redis, or over a
 * map in tests), request selection, snapshot sealing and the operator CLI.
 */
export type { CompileSnapshot, SnapshotIdentity, TenantLog, TenantStore } from "./contracts.ts"
export { INFRA_RETRY_AFTER_MS } from "./cache.ts"
export { runSnapshotCli, SNAPSHOT_USAGE } from "./cli.ts"
export { openSnapshot } from "./open-snapshot.ts"
export { ENVELOPE_ALG, generateKeyPair, privateKeyFromBytes, publicKeyFromBytes, seal } from "./sealing.ts"
export type { Envelope } from "./sealing.ts"
export {
  DEFAULT_ENVIRONMENT,
  ENVIRONMENT_HEADER,
  environmentsKey,
  PROJECT_HEADER,
  tenantFromRequest,
  tenantId,
  UPDATES_CHANNEL
} from "./selection.ts"
export type { TenantId } from "./selection.ts"
export { makeTenantStore, makeTenantStoreFromSnapshots, TenantStoreError, tenantStoreOptions } from "./store.ts"
export type { TenantStoreOptions, TestTenantStore } from "./store.ts"
