/**
 * The cache's ordering cases, driven by a source the test holds open: an
 * update announced while a cold load is still reading is not lost, and a
 * sweep that cannot reach the store keeps every cached version and says so
 * once, not once per project.
 */
import { Deferred, Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { makeTenantCache } from "../../src/tenancy/cache.ts"
import type { SnapshotLookup, SnapshotSource } from "../../src/tenancy/contracts.ts"
import { SourceUnavailable } from "../../src/tenancy/contracts.ts"
import { openSnapshot } from "../../src/tenancy/open-snapshot.ts"
import type { Compiled, OpenStore } from "./support.ts"
import { capturedLog, eventually, openStore, recordingCompile, snapshotDocument, versionOf } from "./support.ts"
import type { TenantStore } from "../../src/tenancy/index.ts"

const open: Array<OpenStore<TenantStore<unknown>>> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((store) => store.close()))
})

/** A one-project source: its value can change, its next read can be held, and it can go down. */
const heldSource = () => {
  let raw = JSON.stringify(snapshotDocument(1))
  let gate: Deferred.Deferred<void> | undefined
  let down = false
  const source: SnapshotSource = {
    lookup: () =>
      Effect.gen(function*() {
        if (down) return yield* new SourceUnavailable({ source: "held", message: "down" })
        const read = raw
        if (gate !== undefined) yield* Deferred.await(gate)
        return { _tag: "Found", raw: read } satisfies SnapshotLookup
      })
  }
  return {
    source,
    set: (version: number) => void (raw = JSON.stringify(snapshotDocument(version))),
    hold: () => void (gate = Deferred.makeUnsafe<void>()),
    release: () => {
      const held = gate
      gate = undefined
      if (held !== undefined) Deferred.doneUnsafe(held, Effect.void)
    },
    setDown: (value: boolean) => void (down = value)
  }
}

const startCache = async (source: SnapshotSource, sweepIntervalMs?: number) => {
  const recorder = recordingCompile()
  const logs = capturedLog()
  const made = makeTenantCache<Compiled>({
    capacity: 10,
    idleTimeoutMs: 60_000,
    sweepIntervalMs,
    primary: source,
    open: (raw, tenant) => openSnapshot(raw, undefined, tenant.key),
    compile: recorder.compile,
    log: logs.log
  }).pipe(Effect.map((cache) => ({ ...cache, ready: Effect.succeed(true), cache })))
  const store = await openStore(made)
  open.push(store)
  return { ...store, logs }
}

describe("tenant cache ordering", () => {
  it("an update announced while a cold load is still reading is applied after it", async () => {
    const held = heldSource()
    const store = await startCache(held.source)
    held.hold()
    const first = store.resolve("acme")
    await new Promise((resolve) => setTimeout(resolve, 20))
    // Published after the load read version 1, announced before it finished.
    held.set(2)
    await Effect.runPromise(store.store.cache.announce({ projectId: "acme", envSlug: "production", version: "2" }))
    held.release()
    const result = await first
    expect(result.ok && result.value.identity.version).toBe("1")
    await eventually(async () => (await versionOf(store, "acme")) === "2", 2_000, "version 2 after the held load")
  })

  it("a sweep that cannot reach the store keeps every cached version and logs once", async () => {
    const held = heldSource()
    const store = await startCache(held.source, 30)
    for (const project of ["a", "b", "c"]) expect(await versionOf(store, project)).toBe("1")
    held.setDown(true)
    await eventually(() => store.logs.lines.some((line) => line.msg.startsWith("anti-entropy sweep")), 2_000, "the sweep's report")
    await new Promise((resolve) => setTimeout(resolve, 100))
    for (const project of ["a", "b", "c"]) expect(await versionOf(store, project)).toBe("1")
    const reports = store.logs.lines.filter((line) => line.msg.startsWith("anti-entropy sweep"))
    expect(reports).toEqual([{
      level: "warn",
      msg: "anti-entropy sweep could not reach the snapshot store; cached versions are kept",
      fields: { tenants: 3, unreached: 3 }
    }])
  })
})
