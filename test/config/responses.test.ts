/**
 * The `[responses]` section: off by default, its url and salt taken from the
 * `[cache]` table (on or off), a store without a salt refused at start, and
 * neither its salt nor its URL's password shown by the redacted view.
 */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { redactedView, responsesSectionOf, snapshotFromDocument } from "../../src/config/index.ts"
import { failure, INVALID, load, warningsOf, withServer } from "./support.ts"

describe("[responses]", () => {
  it("is off by default, with a 30-day TTL", () => {
    const section = responsesSectionOf(load(withServer()).file)
    expect(section.enabled).toBe(false)
    expect(section.store_ttl_seconds).toBe(30 * 24 * 3600)
  })

  it("takes url and encrypt_salt from [cache], even with the cache off", () => {
    const file = load(withServer({ cache: { enabled: false, url: "redis://cache.internal:6380", encrypt_salt: "cache-salt" }, responses: { enabled: true } })).file
    expect(responsesSectionOf(file)).toMatchObject({ enabled: true, url: "redis://cache.internal:6380", encrypt_salt: "cache-salt" })
    const own = load(withServer({ cache: { encrypt_salt: "cache-salt" }, responses: { enabled: true, url: "redis://state:6379", encrypt_salt: "own", store_ttl_seconds: 60 } })).file
    expect(responsesSectionOf(own)).toMatchObject({ url: "redis://state:6379", encrypt_salt: "own", store_ttl_seconds: 60 })
  })

  it("a store that is on without any salt stops the start; off, it needs none", () => {
    expect(failure(withServer({ responses: { enabled: true } }))).toBe(
      `${INVALID}responses.encrypt_salt: must be non-empty when responses.enabled = true (set it, or cache.encrypt_salt): stored responses are always encrypted`
    )
    expect(warningsOf(withServer({ responses: { enabled: false } }))).toEqual([])
  })

  it("a store that is on needs a Redis URL, never echoed", () => {
    const message = failure(withServer({ responses: { enabled: true, encrypt_salt: "s", url: "http://:s3cret@state" } }))
    expect(message).toBe(`${INVALID}responses.url: expected a redis:// or rediss:// URL with a host, or a cluster's redis+cluster://host:port,host:port (the Responses store's)`)
    expect(message).not.toContain("s3cret")
  })

  it("is the gateway's own: a tenant snapshot that sets it is refused by name", () => {
    const result = snapshotFromDocument({ version: 1, responses: { enabled: true } }, "snapshot.json")
    expect(Result.isFailure(result) && result.failure.problems).toEqual(["responses"])
    expect(Result.isFailure(result) && result.failure.error.message).toContain(
      "responses: only store_ttl_seconds may be set in a snapshot; enabled belong to the gateway's own configuration file"
    )
  })

  it("but a project sets its own store_ttl_seconds in its snapshot; the rest stays the gateway's", () => {
    const gateway = load(withServer({ cache: { encrypt_salt: "cache-salt" }, responses: { enabled: true, url: "redis://state:6379", store_ttl_seconds: 600 } })).file
    const own = snapshotFromDocument({ version: 1, responses: { store_ttl_seconds: 120 } }, "snapshot.json", gateway)
    if (Result.isFailure(own)) throw new Error(own.failure.error.message)
    expect(own.success.settings.file.responses).toEqual({ ...gateway.responses, store_ttl_seconds: 120 })
    const inherited = snapshotFromDocument({ version: 1 }, "snapshot.json", gateway)
    expect(Result.isSuccess(inherited) && inherited.success.settings.file.responses.store_ttl_seconds).toBe(600)
    const bad = snapshotFromDocument({ version: 1, responses: { store_ttl_seconds: 0 } }, "snapshot.json", gateway)
    expect(Result.isFailure(bad) && bad.failure.problems).toEqual(["responses.store_ttl_seconds"])
  })

  it("the redacted view hides the salt and the URL's password", () => {
    const view = redactedView(load(withServer({ responses: { enabled: true, encrypt_salt: "salt-view-0001", url: "redis://user:pw-view-0002@state:6379" } }))) as {
      responses: Record<string, unknown>
    }
    const text = JSON.stringify(view.responses)
    expect(text).not.toContain("salt-view-0001")
    expect(text).not.toContain("pw-view-0002")
    expect(view.responses.enabled).toBe(true)
  })
})
