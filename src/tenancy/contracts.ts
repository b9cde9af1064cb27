/**
 * The tenant store's contracts: what it gives the request path, what the
 * caller supplies to compile a snapshot, and the sources it reads snapshots
 * from (Redis, the fallback API, an in-memory map in tests).
 */
import { Schema } from "effect"
import type { Effect } from "effect"
import type { ValidatedSnapshot } from "../config/index.ts"
import type { InfraError } from "../domain/index.ts"
import type { TenantId } from "./selection.ts"

/**
 * A project's configuration for the request path. Generic over `P`, the
 * compiled form, which belongs to the pipeline (routing table, guardrails,
 * cache settings): the store only keeps one `P` per snapshot version.
 */
export interface TenantStore<P> {
  /**
   * The tenant's compiled configuration: from memory when cached, else loaded
   * once however many requests wait for it. Fails with the codes of docs/reference/gateway-spec.md §7.4:
   * `ROUTING_NOT_CONFIGURED`, `ENVIRONMENT_NOT_FOUND` (404),
   * `SNAPSHOT_DECRYPT_FAILED` and `INFRA_UNAVAILABLE` (503).
   */
  readonly resolve: (tenant: TenantId) => Effect.Effect<P, InfraError>
  /** Whether the snapshot store answers (`/readyz` in multi-tenant mode). */
  readonly ready: Effect.Effect<boolean>
  /** The snapshots loaded now, with their versions (`/status`). */
  readonly loaded: () => ReadonlyArray<LoadedSnapshot>
}

/** A tenant snapshot in memory: whose, and which version. */
export interface LoadedSnapshot {
  readonly project_id: string
  readonly environment: string
  readonly version: string
}

/** Which snapshot a compiled configuration came from. */
export interface SnapshotIdentity {
  readonly projectId: string
  readonly envSlug: string
  readonly version: string
}

/**
 * Builds the pipeline's compiled configuration from a validated snapshot;
 * called once per version. A throw counts as an unusable snapshot.
 */
export type CompileSnapshot<P> = (snapshot: ValidatedSnapshot, identity: SnapshotIdentity) => P

/** What a source knows of a tenant: its stored snapshot (as stored), or why there is none. */
export type SnapshotLookup =
  | { readonly _tag: "Found"; readonly raw: string }
  | { readonly _tag: "Missing"; readonly code: "ROUTING_NOT_CONFIGURED" | "ENVIRONMENT_NOT_FOUND" }

/** A source that could not answer (down, timed out, refused us). Never carries a secret. */
export class SourceUnavailable extends Schema.TaggedError<SourceUnavailable>()("SourceUnavailable", {
  source: Schema.String,
  message: Schema.String
}) {}

export interface SnapshotSource {
  readonly lookup: (tenant: TenantId) => Effect.Effect<SnapshotLookup, SourceUnavailable>
}

/** The log the store writes to: the gateway's JSON log fits. Fields never hold secrets. */
export interface TenantLog {
  log(level: "debug" | "info" | "warn" | "error", msg: string, fields?: object): void
}
