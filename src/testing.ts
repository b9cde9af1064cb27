/**
 * Test your own routing: a configuration (TOML, or a tenant snapshot) run by
 * the gateway's own request program, the library's `Gateway`, against a
 * scripted provider layer on the test's clock. There is no second
 * implementation of routing here: resolution, disabled endpoints, variant
 * draws, retries, failover, timeouts and the commit rule are the server's.
 * See docs/testing-your-routing.md.
 *
 * Details
 * - `sendRequest` requires a `ProviderClient` (`scriptedProviders(...)`) and
 *   reads the time from Effect's `Clock`, so `TestClock.adjust` moves the
 *   backoff and timeouts of the request.
 * - Nothing leaves the process: telemetry is off, a `[cache]` that is on
 *   keeps its entries in memory for the one request.
 */
import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import type { Scope } from "effect"
import { parse } from "smol-toml"
import { settingsFromDocument, snapshotFromDocument } from "./config/index.ts"
import { conventionEnvFor, isProviderKind } from "./domain/index.ts"
import type { GatewaySettings } from "./config/index.ts"
import { Gateway, parseText, readAnswer } from "./library/Gateway.ts"
import type { GatewayRequestError, GatewayShape } from "./library/Gateway.ts"
import { gatewayLayer, tenantsFromSnapshots } from "./library/layers.ts"
import type { GatewayOptions } from "./library/layers.ts"
import { ResponseCache, Telemetry } from "./pipeline/index.ts"
import { ProviderClient } from "./providers/transport.ts"
import type { UpstreamCall } from "./providers/transport.ts"

export { layerTest as scriptedProviders, TestReply } from "./providers/testing.ts"
export type { UpstreamCall } from "./providers/transport.ts"

type Env = Readonly<Record<string, string | undefined>>

/** A validated configuration, ready to answer requests with `sendRequest`. */
export interface RoutingUnderTest {
  readonly document: Readonly<Record<string, unknown>>
  readonly options: GatewayOptions
  readonly cacheOn: boolean
  /** Headers every request carries (the project of a snapshot). */
  readonly headers: Readonly<Record<string, string>>
}

/** The project a snapshot is served as; `sendRequest` names it in `x-gw-project-id`. */
const SNAPSHOT_PROJECT = "routing-test"

/**
 * A stand-in key in each provider's convention variable, under the test's
 * own `env`: the scripted providers take any key, and a routing test should
 * not need the real ones to reach them.
 */
const withStandInKeys = (providers: unknown, env: Env): Env => {
  const keys: Record<string, string> = {}
  if (typeof providers === "object" && providers !== null) {
    for (const [id, provider] of Object.entries(providers)) {
      const kind = typeof provider === "object" && provider !== null && "kind" in provider ? provider.kind : id
      if (typeof kind === "string" && isProviderKind(kind)) keys[conventionEnvFor(id, kind)] = "routing-test-key"
    }
  }
  return { ...keys, ...env }
}

/** Validated like the gateway's file at startup; a refusal throws the `check-config` message. */
const validated = (document: Record<string, unknown>, env: Env, source: string): GatewaySettings =>
  Result.getOrThrow(settingsFromDocument(document, env, source))

const underTest = (document: Record<string, unknown>, settings: GatewaySettings, env: Env, extra: Partial<RoutingUnderTest> = {}): RoutingUnderTest => ({
  document,
  cacheOn: settings.file.cache.enabled,
  headers: {},
  ...extra,
  options: {
    env,
    // Routing tests export nothing: the telemetry stage runs, switched off.
    telemetry: Telemetry.layer({ telemetry: { ...settings.file.telemetry, enabled: false }, genai: { ...settings.file.genai_telemetry, enabled: false } }),
    log: { level: "error" },
    ...extra.options
  }
})

/** A configuration as in config/gateway.toml (`[server]` may be left out), validated now, as the gateway does at startup. */
export const routingFromToml = (toml: string, env: Env = {}): RoutingUnderTest => routingFromConfig(parse(toml), env)

/** The same from the parsed TOML shape, as an object (the library's `{ config }` source). */
export const routingFromConfig = (config: Readonly<Record<string, unknown>>, env: Env = {}): RoutingUnderTest => {
  const document: Record<string, unknown> = "server" in config ? { ...config } : { ...config, server: {} }
  const keyed = withStandInKeys(document.providers, env)
  return underTest(document, validated(document, keyed, "<test>"), keyed)
}

/**
 * A tenant snapshot (the JSON document `gateway snapshot publish` takes, with
 * its `disabled_endpoints`), validated now as the gateway validates a
 * published one, and served as a project of a multi-tenant gateway.
 */
export const routingFromSnapshot = (snapshot: Readonly<Record<string, unknown>>, env: Env = {}): RoutingUnderTest => {
  const checked = Result.getOrThrowWith(snapshotFromDocument(snapshot, "<snapshot>"), (refusal) => refusal.error)
  const document = { server: {} }
  const keyed = withStandInKeys(snapshot.providers, env)
  return underTest(document, validated(document, keyed, "<test>"), keyed, {
    cacheOn: checked.settings.file.cache.enabled,
    headers: { "x-gw-project-id": SNAPSHOT_PROJECT },
    options: { tenants: tenantsFromSnapshots({ [SNAPSHOT_PROJECT]: { production: snapshot } }) }
  })
}

/** One request, as a caller would send it. */
export interface RoutingRequest {
  /** The body's `model`. */
  readonly model: string
  /** Default `/v1/chat/completions`. */
  readonly path?: string | undefined
  /** The rest of the body; default: a one-line prompt in the endpoint's format. */
  readonly body?: Readonly<Record<string, unknown>> | undefined
  /** Sets the body's `stream: true`. */
  readonly stream?: boolean | undefined
  /** `x-genai-provider`, `x-gw-experiment-key`, a caller's key, … */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** One upstream call the request made. */
export interface RoutedCall {
  readonly provider: string
  readonly path: string
  /** The body's `model`, when the body is JSON and has one. */
  readonly model: string | undefined
  /** The body sent, parsed when it is JSON. */
  readonly body: unknown
  /** Time of the call, ms since the request started (virtual under `TestClock`). */
  readonly atMs: number
}

/** What the caller got, and every upstream call on the way. */
export interface RoutedAnswer {
  readonly status: number
  /** Lower-case names: `x-gw-upstream-provider`, `x-gw-variant`, `x-gw-error-code`, … */
  readonly headers: Readonly<Record<string, string>>
  /** The body: parsed JSON, or its text (an event stream). */
  readonly body: unknown
  readonly calls: ReadonlyArray<RoutedCall>
}

const PROMPT = "Hello"
const DEFAULT_BODIES: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  "/v1/chat/completions": { messages: [{ role: "user", content: PROMPT }] },
  "/v1/messages": { max_tokens: 256, messages: [{ role: "user", content: PROMPT }] },
  "/v1/responses": { input: PROMPT },
  "/v1/embeddings": { input: PROMPT },
  "/v1/images/generations": { prompt: PROMPT },
  "/v1/audio/speech": { input: PROMPT, voice: "alloy" }
}

const parseBody = (body: UpstreamCall["body"]): unknown => {
  const text = typeof body === "string" ? body : body instanceof Uint8Array ? Buffer.from(body).toString("utf8") : undefined
  return text === undefined ? undefined : parseText(text)
}

const recordedCall = (call: UpstreamCall, atMs: number): RoutedCall => {
  const body = parseBody(call.body)
  const model = typeof body === "object" && body !== null && "model" in body && typeof body.model === "string" ? body.model : undefined
  return { provider: call.providerId, path: call.path, model, body, atMs }
}

/** Where the running request records its upstream calls (fiber-local: each request has its own). */
const CallLog = Context.Reference<{ readonly calls: Array<RoutedCall>; readonly began: number } | undefined>("gateway/testing/CallLog", {
  defaultValue: () => undefined
})

/** The gateway of one routing, built once for many requests (`routingGateway`). */
class RoutedGateway extends Context.Service<RoutedGateway, { readonly routing: RoutingUnderTest; readonly gateway: GatewayShape }>()(
  "gateway/testing/RoutedGateway"
) {}

/** The library's `Gateway` for `routing` over the context's `ProviderClient`, recording each call in the request's `CallLog`. */
const gatewayOf = (routing: RoutingUnderTest): Effect.Effect<GatewayShape, never, ProviderClient | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* ProviderClient
    const recording = Layer.succeed(ProviderClient, ProviderClient.of({
      ...client,
      send: (call) =>
        Effect.flatMap(Effect.all([Effect.service(CallLog), Clock.currentTimeMillis]), ([log, now]) => {
          log?.calls.push(recordedCall(call, now - log.began))
          return client.send(call)
        })
    }))
    const layer = gatewayLayer({ config: routing.document }, {
      ...routing.options,
      client: recording,
      ...(routing.cacheOn ? { cache: ResponseCache.layerTest() } : {})
    })
    // The configuration was validated when `routing` was made.
    const context = yield* Layer.build(Layer.orDie(layer))
    return Context.get(context, Gateway)
  })

/**
 * The gateway of `routing` built once, for a test that sends many requests
 * (`Effect.provide(routingGateway(routing))` around them): `sendRequest` with
 * the same `routing` uses it instead of building one per request.
 */
export const routingGateway = (routing: RoutingUnderTest): Layer.Layer<RoutedGateway, never, ProviderClient> =>
  Layer.effect(RoutedGateway, Effect.map(gatewayOf(routing), (gateway) => RoutedGateway.of({ routing, gateway })))

/**
 * Sends one request through the gateway of `routing` (built for it, or the
 * one `routingGateway` provides), with the `ProviderClient` of the context,
 * and reads the whole answer. Fails only when the answer was cut (what an
 * HTTP caller sees as a dropped connection).
 */
export const sendRequest = (routing: RoutingUnderTest, request: RoutingRequest): Effect.Effect<RoutedAnswer, GatewayRequestError, ProviderClient> =>
  Effect.scoped(Effect.gen(function*() {
    const built = yield* Effect.serviceOption(RoutedGateway)
    const gateway = Option.isSome(built) && built.value.routing === routing ? built.value.gateway : yield* gatewayOf(routing)
    const log = { calls: [] as Array<RoutedCall>, began: yield* Clock.currentTimeMillis }
    return yield* Effect.provideService(send(gateway, routing, request, log), CallLog, log)
  }))

const send = (gateway: GatewayShape, routing: RoutingUnderTest, request: RoutingRequest, log: { readonly calls: Array<RoutedCall> }) =>
  Effect.gen(function*() {
    const path = request.path ?? "/v1/chat/completions"
    const body = { ...(request.body ?? DEFAULT_BODIES[path]), model: request.model, ...(request.stream === true ? { stream: true } : {}) }
    const response = yield* gateway.request({
      method: "POST",
      path,
      headers: { "content-type": "application/json", ...(path === "/v1/messages" ? { "anthropic-version": "2023-06-01" } : {}), ...routing.headers, ...request.headers },
      body: JSON.stringify(body)
    })
    const answer = yield* readAnswer(response)
    return { ...answer, calls: log.calls }
  })
