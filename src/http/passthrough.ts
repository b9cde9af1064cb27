/**
 * Native passthrough (docs/reference/gateway-spec.md §1.4, 7.3.5; docs/reference/DESIGN.md "Providers"): `/v1/<kind>/*`
 * for every provider kind with the `passthrough` capability (bedrock, vertex,
 * cohere, gemini), any method.
 *
 * The request goes to the provider of that kind (the one whose id is the kind
 * name, else the only one; `x-genai-provider` picks among several) with the
 * method, the path rest appended to the base URL's path, the query and the
 * body forwarded byte for byte, the body streamed. The caller's credential
 * headers and the gateway's own headers never leave; the provider's
 * configured credential is added in its auth form (a caller key is used only
 * when none is configured). The response, success or error, comes back byte
 * for byte, however long, with the upstream status, content type and
 * encoding; errors also carry `x-gw-error-code` and `x-gw-upstream-provider`,
 * classified from the first 64 KB of the body. One attempt, no retries.
 */
import { Effect, Result } from "effect"
import type { Redacted, Scope } from "effect"
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http"
import type { GatewaySettings } from "../config/index.ts"
import { classificationHeaders, clip, GatewayError, PROVIDER_KIND_INFO, PROVIDER_KINDS, UpstreamError } from "../domain/index.ts"
import type { AnyGatewayFailure, FailureSource, ProviderKind } from "../domain/index.ts"
import { attemptScoped, callerKey, header, heldStage, holdBody, inBandFailure, passThroughHeaders, reply, responseHeaders } from "../pipeline/index.ts"
import type { ChunkOut, Reply, StreamStage } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import { providerTimeoutMs } from "../config/index.ts"
import { unauthenticatedCall } from "../providers/adapter.ts"
import type { CompiledProvider } from "../providers/adapter.ts"
import { decodeWhole, isEncoded } from "../providers/content-encoding.ts"
import { parseRetryAfterMs } from "../providers/retry-after.ts"
import { ERROR_BODY_LIMIT, maskSecret } from "../providers/transport.ts"
import type { ProviderClient, UpstreamResponse } from "../providers/transport.ts"
import { bodyTooLarge, hasBody, limitedBody } from "./limited-body.ts"
import { readWholeBody } from "./body.ts"
import type { ProjectResolver } from "./project.ts"
import type { RouteDef } from "./router.ts"

export interface PassthroughDependencies {
  readonly project: ProjectResolver
  /** The gateway's own `[server]` limits. */
  readonly server: GatewaySettings["file"]["server"]
  readonly client: ProviderClient["Service"]
}

/** Kinds that have a passthrough route. */
export const PASSTHROUGH_KINDS: ReadonlyArray<ProviderKind> = PROVIDER_KINDS.filter((kind) =>
  PROVIDER_KIND_INFO[kind].capabilities.has("passthrough")
)

/** Credential headers a caller may send to these providers; none is forwarded. */
const CREDENTIAL_HEADERS = ["x-goog-api-key", "x-amz-security-token"]
/** Query parameters that carry a credential (Gemini's `?key=`). */
const CREDENTIAL_PARAMS: Partial<Record<ProviderKind, ReadonlyArray<string>>> = { gemini: ["key"] }

/** The provider a passthrough request goes to, or the error that explains why there is none. */
export const choosePassthroughProvider = (
  providers: ReadonlyMap<string, CompiledProvider>,
  kind: ProviderKind,
  requested: string | undefined
): Result.Result<CompiledProvider, GatewayError> => {
  const ofKind = [...providers.values()].filter((provider) => provider.kind === kind)
  if (requested !== undefined) {
    const chosen = ofKind.find((provider) => provider.id === requested.trim())
    return chosen !== undefined ? Result.succeed(chosen) : Result.fail(
      new GatewayError({ status: 400, code: "invalid_request", message: `x-genai-provider "${clip(requested)}" is not a configured ${kind} provider` })
    )
  }
  const chosen = ofKind.find((provider) => provider.id === kind) ?? (ofKind.length === 1 ? ofKind[0] : undefined)
  if (chosen !== undefined) return Result.succeed(chosen)
  if (ofKind.length === 0) {
    return Result.fail(
      new GatewayError({
        status: 404,
        code: "not_found",
        message: `no ${kind} provider is configured: add [providers.${kind}] to the gateway configuration to use /v1/${kind}/*`
      })
    )
  }
  return Result.fail(
    new GatewayError({
      status: 400,
      code: "invalid_request",
      message: `several ${kind} providers are configured (${ofKind.map((p) => p.id).join(", ")}); choose one with the x-genai-provider header`
    })
  )
}

/** The caller's raw query (with `?`) minus credential parameters; every other byte kept. */
const forwardedQuery = (query: string, credentialParams: ReadonlyArray<string>): string => {
  if (query.length <= 1 || credentialParams.length === 0) return query.length <= 1 ? "" : query.slice(1)
  return query
    .slice(1)
    .split("&")
    .filter((pair) => {
      const name = pair.split("=", 1)[0]
      let decoded = name
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, " "))
      } catch {
        // keep the raw name
      }
      return !credentialParams.includes(decoded)
    })
    .join("&")
}

/** Upstream path: the provider's path for the rest, the caller's query first, then a query credential. */
const upstreamPath = (providerPath: string, callerQuery: string): string => {
  const at = providerPath.indexOf("?")
  const path = at === -1 ? providerPath : providerPath.slice(0, at)
  const query = [callerQuery, at === -1 ? "" : providerPath.slice(at + 1)].filter((part) => part !== "").join("&")
  return query === "" ? path : `${path}?${query}`
}

const withoutCredentials = (incoming: IncomingHttpHeaders, authName: string | undefined): IncomingHttpHeaders => {
  const headers = { ...incoming }
  for (const name of CREDENTIAL_HEADERS) delete headers[name]
  if (authName !== undefined) delete headers[authName]
  return headers
}

/** The caller's own key, used only for a provider without a configured credential. */
const callerCredential = (incoming: IncomingHttpHeaders): Redacted.Redacted<string> | undefined =>
  callerKey(incoming) ?? callerKey({ "x-api-key": incoming["x-goog-api-key"] })

/** Whether a raw path rest has a `.` or `..` segment (escaped or not), which could leave the base URL's path. */
const hasDotSegment = (rest: string): boolean =>
  rest.split("/").some((segment) => {
    const decoded = segment.replace(/%2e/gi, ".")
    return decoded === "." || decoded === ".."
  })

/** The classification of an upstream error response, from the first part of its body. */
const classify = (source: FailureSource, response: UpstreamResponse, prefix: Uint8Array): UpstreamError =>
  UpstreamError.fromResponse(source, response.status, decodeWhole(response.headers["content-encoding"], prefix, ERROR_BODY_LIMIT) ?? new Uint8Array(0), {
    retryAfterMs: parseRetryAfterMs(response.headers)
  })

/**
 * The stage of an error response's body: its first 64 KB (or all of it) are
 * held to classify it, and sent with the key it echoes masked; the rest
 * follows as it comes.
 */
const errorStage = (
  ctx: HttpRequestContext,
  source: FailureSource,
  response: UpstreamResponse,
  secret: Redacted.Redacted<string> | undefined,
  head: OutgoingHttpHeaders
): StreamStage => {
  const prefix: Array<Uint8Array> = []
  let prefixSize = 0
  let committed = false
  const classified = (out: ChunkOut): void => {
    committed = true
    let held: Uint8Array = prefix.length === 1 ? prefix[0] : Buffer.concat(prefix, prefixSize)
    const error = classify(source, response, held)
    ctx.log.error_code = error.reason
    Object.assign(head, classificationHeaders(error))
    // An error that echoes the key it was sent gets it masked; its length changes with it.
    if (!isEncoded(response.headers["content-encoding"])) {
      const masked = maskSecret(held, secret)
      if (masked !== held) {
        held = masked
        delete head["content-length"]
      }
    }
    if (held.byteLength > 0) out.push(held)
  }
  return {
    push: (chunk, out) => {
      if (committed) {
        out.push(chunk)
        return "commit"
      }
      prefix.push(chunk)
      prefixSize += chunk.byteLength
      if (prefixSize < ERROR_BODY_LIMIT) return "hold"
      classified(out)
      return "commit"
    },
    end: (out) => {
      if (!committed) classified(out)
      return "end"
    },
    stop: undefined
  }
}

/**
 * Forwards the response as it arrives, success or error. An error's head waits
 * for the first 64 KB of its body (or all of it), which classifies it; the
 * body then follows whole. A failure after the head ends the connection
 * abruptly (the reply's writer cuts it).
 */
const forwardNative = (
  ctx: HttpRequestContext,
  source: FailureSource,
  response: UpstreamResponse,
  secret: Redacted.Redacted<string> | undefined
): Effect.Effect<Reply, UpstreamError> => {
  const head = responseHeaders(response.headers, "verbatim")
  const stage = response.status >= 400 ? errorStage(ctx, source, response, secret, head) : heldStage(0)
  return Effect.map(
    holdBody(undefined, response.body, stage, (error) => inBandFailure(source, error)),
    (body): Reply => reply(response.status, head, body)
  )
}

export const passthroughRoutes = ({ project: projectOf, server, client }: PassthroughDependencies): ReadonlyArray<RouteDef<never>> =>
  PASSTHROUGH_KINDS.map((kind) => ({
    method: "*" as const,
    path: `/v1/${kind}/*`,
    handler: (ctx: HttpRequestContext): Effect.Effect<Reply, AnyGatewayFailure, Scope.Scope> =>
      Effect.gen(function*() {
        const { table, settings } = yield* projectOf(ctx)
        const chosen = choosePassthroughProvider(table.providers, kind, header(ctx, "x-genai-provider"))
        if (Result.isFailure(chosen)) return yield* chosen.failure
        const provider = chosen.success
        const rest = ctx.params["*"] ?? ""
        if (hasDotSegment(rest)) {
          return yield* new GatewayError({ status: 400, code: "invalid_request", message: "the passthrough path must not contain . or .. segments" })
        }
        const resolved = settings.providers.get(provider.id)
        const configured = resolved?.credential.value !== undefined
        const authName = resolved?.authType === "api_key_header" ? resolved.authName.toLowerCase() : undefined
        const incoming = ctx.req.headers
        const providerRequest = provider.request("passthrough", "", configured ? undefined : callerCredential(incoming), `/${rest}`)
        const refused = unauthenticatedCall(provider, providerRequest)
        if (refused !== undefined) return yield* refused
        const { path, headers: auth, secret, sign } = providerRequest
        const headers = passThroughHeaders(withoutCredentials(incoming, authName), auth, ctx.requestId)
        const queryCredentials = [...(CREDENTIAL_PARAMS[kind] ?? []), ...(resolved?.authType === "query_param" ? [resolved.authName] : [])]
        const withBody = hasBody(incoming)
        const maxBody = server.max_body_bytes
        if (Number(incoming["content-length"]) > maxBody) return yield* bodyTooLarge(maxBody, "server.max_body_bytes")
        if (withBody && incoming["content-length"] !== undefined) headers["content-length"] = incoming["content-length"]
        // A SigV4 provider signs over the exact bytes: its body is read whole (bounded) first.
        const whole = sign !== undefined && withBody ? yield* readWholeBody(ctx, maxBody) : undefined
        // Opaque, but not unbounded: the body is counted as it streams and stopped at the limit.
        const body = withBody && whole === undefined ? limitedBody(ctx.req, maxBody) : undefined
        ctx.log.provider = provider.id
        const response = yield* client.send({
          providerId: provider.id,
          family: provider.family,
          origin: provider.origin,
          method: ctx.method,
          path: upstreamPath(path, forwardedQuery(ctx.query, queryCredentials)),
          headers,
          body: whole ?? body?.stream ?? (incoming["content-length"] === "0" || sign !== undefined ? "" : undefined),
          idleTimeoutMs: providerTimeoutMs(settings, provider.id),
          errorBodies: "stream",
          secret,
          sign
        }).pipe(
          Effect.catchTag("UpstreamError", (error) =>
            Effect.fail(body?.exceeded() === true ? bodyTooLarge(maxBody, "server.max_body_bytes") : error)
          )
        )
        return yield* forwardNative(ctx, { providerId: provider.id, family: provider.family }, response, secret)
      }).pipe(attemptScoped)
  }))
