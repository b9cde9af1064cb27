/**
 * The in-memory tenant store (`makeTenantStoreFromSnapshots`), which tests of
 * the request path use to run multi-tenant mode without Redis: the same
 * outcomes as the live store for configured, missing, sealed and unavailable
 * projects, and publishing that the next request sees.
 */
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { generateKeyPair, makeTenantStoreFromSnapshots, privateKeyFromBytes, publicKeyFromBytes, seal } from "../../src/tenancy/index.ts"
import type { TenantStore } from "../../src/tenancy/index.ts"
import type { Compiled, OpenStore } from "./support.ts"
import { openStore, recordingCompile, snapshotDocument } from "./support.ts"

const open: Array<OpenStore<TenantStore<unknown>>> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((store) => store.close()))
})

const outcome = async (store: OpenStore<TenantStore<Compiled>>, projectId: string, envSlug?: string) => {
  const result = await store.resolve(projectId, envSlug)
  return result.ok ? `${result.value.identity.version} ${result.value.baseUrls.join(",")}` : `${result.error.code} ${result.error.status}`
}

describe("in-memory tenant store", () => {
  it("serves each project its own snapshot and the gateway-side failures (docs/reference/gateway-spec.md §7.4) for the rest", async () => {
    const recorder = recordingCompile()
    const store = await openStore(makeTenantStoreFromSnapshots<Compiled>({
      acme: { production: snapshotDocument(1, { baseUrl: "http://127.0.0.1:9101/v1" }), staging: snapshotDocument("s1") },
      globex: { production: snapshotDocument(7, { baseUrl: "http://127.0.0.1:9102/v1", extra: { disabled_endpoints: ["embeddings"] } }) },
      broken: { production: { version: 1, routes: { r: { endpoint: "chat" } } } }
    }, recorder.compile))
    open.push(store)
    expect(await outcome(store, "acme")).toBe("1 http://127.0.0.1:9101/v1")
    expect(await outcome(store, "acme", "staging")).toBe("s1 https://api.openai.com/v1")
    expect(await outcome(store, "globex")).toBe("7 http://127.0.0.1:9102/v1")
    const globex = await store.resolve("globex")
    expect(globex.ok && globex.value.disabled).toEqual(["embeddings"])
    expect(await outcome(store, "acme", "qa")).toBe("ENVIRONMENT_NOT_FOUND 404")
    expect(await outcome(store, "initech")).toBe("ROUTING_NOT_CONFIGURED 404")
    expect(await outcome(store, "broken")).toBe("SNAPSHOT_DECRYPT_FAILED 503")
    store.store.setAvailable(false)
    expect(await outcome(store, "initech")).toBe("INFRA_UNAVAILABLE 503")
    expect(await outcome(store, "acme")).toBe("1 http://127.0.0.1:9101/v1")
    expect(await store.ready()).toBe(false)
  })

  it("a publish is seen by the next request, compiled once", async () => {
    const recorder = recordingCompile()
    const store = await openStore(makeTenantStoreFromSnapshots<Compiled>({ acme: { production: snapshotDocument(1) } }, recorder.compile))
    open.push(store)
    expect(await outcome(store, "acme")).toBe("1 https://api.openai.com/v1")
    await Promise.all(Array.from({ length: 5 }, () => Effect.runPromise(store.store.publish("acme", "production", snapshotDocument(2)))))
    expect(await outcome(store, "acme")).toBe("2 https://api.openai.com/v1")
    expect(recorder.compiles("acme")).toBe(2)
  })

  it("with a private key it accepts only envelopes sealed for it", async () => {
    const keys = generateKeyPair()
    const sealed = JSON.stringify(seal(JSON.stringify(snapshotDocument("sealed-1")), publicKeyFromBytes(keys.publicKey)))
    const store = await openStore(makeTenantStoreFromSnapshots<Compiled>(
      { sealed: { production: sealed }, plain: { production: snapshotDocument(1) } },
      recordingCompile().compile,
      { privateKey: privateKeyFromBytes(keys.privateKey) }
    ))
    open.push(store)
    expect(await outcome(store, "sealed")).toBe("sealed-1 https://api.openai.com/v1")
    expect(await outcome(store, "plain")).toBe("SNAPSHOT_DECRYPT_FAILED 503")
  })
})
