/**
 * The Redis URLs the gateway accepts (src/config/redis-url.ts): one server,
 * or a Redis Cluster's seed nodes (`redis+cluster://`, or a `redis://` URL
 * listing several hosts), in every section that names a Redis; and a
 * cluster URL's password kept out of logs and of `check-config`'s view.
 */
import { describe, expect, it } from "vitest"
import { isRedisUrl, parseRedisUrl, redactedView, redisLogTarget } from "../../src/config/index.ts"
import { failure, INVALID, load, withServer } from "./support.ts"

const CLUSTER = "redis+cluster://10.0.0.1:7000,10.0.0.2:7001,10.0.0.3"

describe("parseRedisUrl", () => {
  it("one server: redis:// and rediss:// with a host, database and password as ioredis reads them", () => {
    expect(parseRedisUrl("redis://127.0.0.1:6379/2")).toEqual({ _tag: "Server", url: "redis://127.0.0.1:6379/2" })
    expect(parseRedisUrl("rediss://:pw@cache.internal")).toEqual({ _tag: "Server", url: "rediss://:pw@cache.internal" })
  })

  it("a cluster: its seeds (port 6379 when none), TLS by scheme, user and password decoded", () => {
    expect(parseRedisUrl(CLUSTER)).toEqual({
      _tag: "Cluster",
      tls: false,
      nodes: [{ host: "10.0.0.1", port: 7000 }, { host: "10.0.0.2", port: 7001 }, { host: "10.0.0.3", port: 6379 }],
      username: undefined,
      password: undefined
    })
    expect(parseRedisUrl("rediss+cluster://app:p%40ss@a.internal:7000/")).toMatchObject({ _tag: "Cluster", tls: true, username: "app", password: "p@ss", nodes: [{ host: "a.internal", port: 7000 }] })
    expect(parseRedisUrl("redis://a:7000,b:7001")).toMatchObject({ _tag: "Cluster", tls: false, nodes: [{ host: "a", port: 7000 }, { host: "b", port: 7001 }] })
    expect(parseRedisUrl("rediss://a:7000,[::1]:7001")).toMatchObject({ _tag: "Cluster", tls: true, nodes: [{ host: "a", port: 7000 }, { host: "::1", port: 7001 }] })
  })

  it("refuses what is neither: no host, a bad port, another scheme, a cluster with a database", () => {
    for (const url of ["redis+cluster://", "redis+cluster://a:7000,", "redis+cluster://a:99999", "http://a:7000,b:7001", "redis://a:1,b:2/3", "redis://", "not a url"]) {
      expect(isRedisUrl(url), url).toBe(false)
    }
  })
})

describe("a cluster URL's password", () => {
  const url = "redis+cluster://gateway:s3cr%2Fet@10.0.0.1:7000,10.0.0.2:7000"

  it("is replaced in what a log shows, and scrubbed from error text", () => {
    const target = redisLogTarget(url)
    expect(target.shown).toBe("redis+cluster://gateway:redacted@10.0.0.1:7000,10.0.0.2:7000")
    expect(target.target).toBe("10.0.0.1:7000,10.0.0.2:7000")
    expect(target.scrub("WRONGPASS s3cr/et")).toBe("WRONGPASS redacted")
  })

  it("is never in check-config's view", () => {
    const settings = load(withServer({
      cache: { enabled: true, url, encrypt_salt: "s" },
      limits: { url },
      responses: { url },
      tenant_routing: { redis_url: url }
    }))
    const view = JSON.stringify(redactedView(settings))
    expect(view).not.toContain("s3cr")
    expect(view).toContain("redis+cluster://gateway:redacted@10.0.0.1:7000,10.0.0.2:7000")
  })
})

describe("every Redis setting takes a cluster", () => {
  it("[cache] url, [limits] url, [responses] url and tenant_routing.redis_url", () => {
    const settings = load(withServer({
      cache: { enabled: true, url: CLUSTER, encrypt_salt: "s" },
      limits: { url: CLUSTER },
      responses: { enabled: true },
      tenant_routing: { enabled: true, redis_url: CLUSTER }
    }))
    expect(settings.file.cache.url).toBe(CLUSTER)
    expect(settings.file.tenant_routing.redis_url).toBe(CLUSTER)
  })

  it("a malformed one is refused by name, its text never echoed", () => {
    const message = failure(withServer({ cache: { enabled: true, url: "redis+cluster://:hunter2@a:7000,b:notaport", encrypt_salt: "s" } }))
    expect(message).toBe(`${INVALID}cache.url: expected a redis:// or rediss:// URL with a host, or a cluster's redis+cluster://host:port,host:port`)
    expect(failure(withServer({ tenant_routing: { enabled: true, redis_url: "redis+cluster://" } }))).toContain(
      "tenant_routing.redis_url: expected a redis:// or rediss:// URL, or a cluster's redis+cluster://host:port,host:port"
    )
  })
})
