/**
 * The platform auth exchange (docs/reference/gateway-spec.md §5) against a fake exchange on loopback:
 * what is sent, token caching with the skew, one exchange for concurrent
 * requests, the caller's 401/403/503, and secrets kept out of logs and errors.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { GatewayConfig } from "../../src/config/index.ts"
import { GatewayError, InfraError, renderGatewayError, renderInfraError } from "../../src/domain/index.ts"
import { Log } from "../../src/infra/log.ts"
import { PlatformAuth } from "../../src/tenancy/auth-exchange.ts"
import { startFakeExchange } from "../fixtures/fake-exchange.ts"
import type { FakeExchange } from "../fixtures/fake-exchange.ts"
import { closedPort } from "../fixtures/otlp-receiver.ts"

const KEY = "pk-live-0123456789abcdef"
const headers = (key = KEY, project = "proj-a") => ({ "x-gw-authorization": `Bearer ${key}`, "x-gw-project-id": project })

const authSettings = (auth: Record<string, unknown>) => GatewayConfig.fromDocument({ server: {}, auth: { enabled: true, ...auth } }).file.auth

/** Runs `body` with the live exchange at `exchange`, and the fake exchange closed afterwards. */
const withExchange = <A, E>(
  options: { readonly expiresIn?: number; readonly auth?: Record<string, unknown> },
  body: (exchange: FakeExchange, logs: Array<Record<string, unknown>>) => Effect.Effect<A, E, PlatformAuth>
) =>
  Effect.gen(function*() {
    const exchange = yield* Effect.acquireRelease(
      Effect.promise(() => startFakeExchange({ keys: { [KEY]: ["proj-a", "proj-b"] }, expiresIn: options.expiresIn })),
      (exchange) => Effect.promise(() => exchange.close())
    )
    const logs: Array<Record<string, unknown>> = []
    const layer = PlatformAuth.layer(authSettings({ exchange_url: exchange.url, ...options.auth })).pipe(Layer.provide(Log.layerTest(logs)))
    return yield* body(exchange, logs).pipe(Effect.provide(layer))
  }).pipe(Effect.scoped)

const authenticate = (h: Record<string, string>) => Effect.flatMap(PlatformAuth, (auth) => auth.authenticate(h))

describe("PlatformAuth exchange", () => {
  it.effect("posts the project with the platform key as a bearer credential and returns the token", () =>
    withExchange({}, (exchange) =>
      Effect.gen(function*() {
        const token = yield* authenticate(headers())
        assert.strictEqual(Redacted.value(token!.token), "tok-proj-a-1")
        assert.strictEqual(token!.projectId, "proj-a")
        assert.deepStrictEqual(exchange.requests, [{ authorization: `Bearer ${KEY}`, contentType: "application/json", body: { project_id: "proj-a" } }])
      })))

  it.effect("caches the token per (key, project) until expires_in − cache_skew_seconds", () =>
    withExchange({ expiresIn: 120, auth: { cache_skew_seconds: 60 } }, (exchange) =>
      Effect.gen(function*() {
        yield* authenticate(headers())
        yield* TestClock.adjust("59 seconds")
        const cached = yield* authenticate(headers())
        assert.strictEqual(Redacted.value(cached!.token), "tok-proj-a-1")
        assert.strictEqual(exchange.requests.length, 1)
        // Another project of the same key is another token.
        yield* authenticate(headers(KEY, "proj-b"))
        assert.strictEqual(exchange.requests.length, 2)
        yield* TestClock.adjust("2 seconds")
        const renewed = yield* authenticate(headers())
        assert.strictEqual(Redacted.value(renewed!.token), "tok-proj-a-3")
        assert.strictEqual(exchange.requests.length, 3)
      })))

  it.effect("a token living no longer than the skew is not cached", () =>
    withExchange({ expiresIn: 30, auth: { cache_skew_seconds: 60 } }, (exchange) =>
      Effect.gen(function*() {
        yield* authenticate(headers())
        yield* authenticate(headers())
        assert.strictEqual(exchange.requests.length, 2)
      })))

  it.effect("concurrent requests for the same key and project share one exchange", () =>
    withExchange({}, (exchange) =>
      Effect.gen(function*() {
        exchange.answer({ delayMs: 100 })
        const tokens = yield* Effect.all(Array.from({ length: 20 }, () => authenticate(headers())), { concurrency: "unbounded" })
        assert.strictEqual(exchange.requests.length, 1)
        assert.deepStrictEqual(new Set(tokens.map((token) => Redacted.value(token!.token))), new Set(["tok-proj-a-1"]))
      })))

  it.effect("the configured api_token and project_id stand in for absent headers", () =>
    withExchange({ auth: { api_token: KEY, project_id: "proj-b" } }, (exchange) =>
      Effect.gen(function*() {
        const token = yield* authenticate({})
        assert.strictEqual(token!.projectId, "proj-b")
        assert.strictEqual(exchange.requests[0].authorization, `Bearer ${KEY}`)
      })))
})

describe("PlatformAuth refusals", () => {
  it.effect("an unknown key: 401 with x-gw-error-code auth in the caller's format, no upstream provider header", () =>
    withExchange({}, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(authenticate(headers("pk-unknown")))
        assert.instanceOf(error, GatewayError)
        const openai = renderGatewayError(error as GatewayError, "openai")
        assert.strictEqual(openai.status, 401)
        assert.deepStrictEqual(openai.headers, { "x-gw-error-code": "auth" })
        assert.strictEqual(JSON.parse(openai.body as string).error.type, "authentication_error")
        const anthropic = renderGatewayError(error as GatewayError, "anthropic")
        assert.strictEqual(anthropic.status, 401)
        assert.strictEqual(JSON.parse(anthropic.body as string).error.type, "authentication_error")
      })))

  it.effect("a project the key may not use: 403 with x-gw-error-code forbidden", () =>
    withExchange({}, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(authenticate(headers(KEY, "proj-z")))
        const rendered = renderGatewayError(error as GatewayError, "openai")
        assert.strictEqual(rendered.status, 403)
        assert.deepStrictEqual(rendered.headers, { "x-gw-error-code": "forbidden" })
        assert.strictEqual(JSON.parse(rendered.body as string).error.type, "permission_error")
      })))

  it.effect("missing credentials are a 401 before any exchange", () =>
    withExchange({}, (exchange) =>
      Effect.gen(function*() {
        const noKey = yield* Effect.flip(authenticate({ "x-gw-project-id": "proj-a" }))
        assert.strictEqual((noKey as GatewayError).status, 401)
        const noProject = yield* Effect.flip(authenticate({ "x-gw-authorization": `Bearer ${KEY}` }))
        assert.strictEqual((noProject as GatewayError).status, 401)
        const notBearer = yield* Effect.flip(authenticate({ "x-gw-authorization": KEY, "x-gw-project-id": "proj-a" }))
        assert.strictEqual((notBearer as GatewayError).classification, "auth")
        assert.strictEqual(exchange.requests.length, 0)
      })))

  it.effect("an exchange slower than exchange_timeout_ms: 503 INFRA_UNAVAILABLE with the retry headers, and the next request asks again", () =>
    withExchange({ auth: { exchange_timeout_ms: 100 } }, (exchange) =>
      Effect.gen(function*() {
        exchange.answer({ delayMs: 3000 })
        const error = yield* Effect.flip(authenticate(headers()))
        assert.instanceOf(error, InfraError)
        const rendered = renderInfraError(error as InfraError, "openai")
        assert.strictEqual(rendered.status, 503)
        assert.strictEqual(JSON.parse(rendered.body as string).error.code, "INFRA_UNAVAILABLE")
        assert.strictEqual(rendered.headers["x-should-retry"], "true")
        assert.isDefined(rendered.headers["retry-after-ms"])
        assert.isDefined(rendered.headers["retry-after"])
        assert.notProperty(rendered.headers, "x-gw-error-code")
        exchange.answer(undefined)
        const token = yield* authenticate(headers())
        assert.isDefined(token)
      })))

  it.effect("an exchange answering 5xx, or without a token, is unavailable (503)", () =>
    withExchange({}, (exchange) =>
      Effect.gen(function*() {
        exchange.answer({ status: 502, body: "bad gateway" })
        assert.strictEqual(((yield* Effect.flip(authenticate(headers()))) as InfraError).code, "INFRA_UNAVAILABLE")
        exchange.answer({ status: 200, body: JSON.stringify({ expires_in: 60 }) })
        assert.strictEqual(((yield* Effect.flip(authenticate(headers()))) as InfraError).code, "INFRA_UNAVAILABLE")
      })))

  it.effect("an unreachable exchange is 503 INFRA_UNAVAILABLE", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(closedPort)
      const layer = PlatformAuth.layer(authSettings({ exchange_url: `http://127.0.0.1:${port}/exchange` })).pipe(Layer.provide(Log.layerTest([])))
      const error = yield* Effect.flip(authenticate(headers())).pipe(Effect.provide(layer))
      assert.strictEqual((error as InfraError).code, "INFRA_UNAVAILABLE")
    }))

  it.effect("the platform key and the token never appear in an error or a log line", () =>
    withExchange({ auth: { exchange_timeout_ms: 100 } }, (exchange, logs) =>
      Effect.gen(function*() {
        const token = yield* authenticate(headers())
        const seen: Array<string> = [String(token), JSON.stringify(token)]
        for (const answer of [{ status: 401 }, { status: 403 }, { status: 500 }, { delayMs: 1000 }, { status: 200, body: "{" }]) {
          exchange.answer(answer)
          const error = yield* Effect.flip(authenticate(headers(KEY, "proj-b")))
          seen.push(error.message, JSON.stringify(error))
          seen.push(JSON.stringify(error._tag === "GatewayError" ? renderGatewayError(error, "anthropic") : renderInfraError(error, "openai")))
        }
        assert.isAbove(logs.length, 0)
        seen.push(JSON.stringify(logs))
        for (const text of seen) {
          assert.notInclude(text, KEY)
          assert.notInclude(text, "tok-proj-a-1")
        }
      })))
})

describe("PlatformAuth off", () => {
  it.effect("with [auth] disabled every request passes without a token and nothing is exchanged", () =>
    Effect.gen(function*() {
      const layer = PlatformAuth.layer(GatewayConfig.fromDocument({ server: {} }).file.auth).pipe(Layer.provide(Log.layerTest([])))
      const token = yield* authenticate({}).pipe(Effect.provide(layer))
      assert.isUndefined(token)
    }))
})
