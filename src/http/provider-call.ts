/**
 * A caller's request sent as it is to one provider's own endpoint (the Files
 * API, a native provider's stored responses): the caller's method, query and
 * headers, the provider's path and auth (the caller's own key when it sent
 * one), one attempt and no retries, the answer held and forwarded with
 * `x-gw-upstream-provider`.
 */
import { Effect } from "effect"
import type { Readable } from "node:stream"
import type { GatewaySettings } from "../config/index.ts"
import { providerTimeoutMs } from "../config/index.ts"
import type { UpstreamError } from "../domain/index.ts"
import { callerKey, forwardHeld, passThroughHeaders } from "../pipeline/index.ts"
import type { Answer } from "../pipeline/index.ts"
import { unauthenticatedCall, withQuery } from "../providers/adapter.ts"
import type { CompiledProvider, Operation } from "../providers/adapter.ts"
import type { ProviderClient } from "../providers/transport.ts"
import type { AnyGatewayFailure } from "../domain/index.ts"
import type { HttpRequestContext } from "./context.ts"

export interface ProviderCall {
  readonly client: ProviderClient["Service"]
  readonly settings: GatewaySettings
  readonly provider: CompiledProvider
  readonly operation: Operation
  /** Appended to the operation's path (`/{id}`, `/{id}/content`). */
  readonly suffix: string
  /** A streamed upload, with its declared length when the caller gave one. */
  readonly body?: { readonly stream: Readable; readonly length: string | undefined } | undefined
  /** What a failed send becomes (an upload cut short is the caller's 413, not the upstream's failure). */
  readonly onSendFailure?: ((error: UpstreamError) => AnyGatewayFailure) | undefined
}

/** The caller's query without `api-version` (Azure's is the provider's own), to append upstream. */
const forwardedQuery = (query: string): string => {
  if (query.length <= 1) return ""
  const params = new URLSearchParams(query)
  params.delete("api-version")
  return params.toString()
}

/** Sends the caller's request to the provider's endpoint and forwards its answer (needs the attempt's scope). */
export const callProvider = Effect.fnUntraced(function*(ctx: HttpRequestContext, call: ProviderCall) {
  const { provider } = call
  const providerRequest = provider.request(call.operation, "", callerKey(ctx.req.headers), call.suffix)
  const refused = unauthenticatedCall(provider, providerRequest)
  if (refused !== undefined) return yield* refused
  const { path, headers: auth, secret } = providerRequest
  const headers = passThroughHeaders(ctx.req.headers, auth, ctx.requestId)
  if (call.body?.length !== undefined) headers["content-length"] = call.body.length
  ctx.log.provider = provider.id
  const onSendFailure = call.onSendFailure
  const response = yield* call.client.send({
    providerId: provider.id,
    family: provider.family,
    origin: provider.origin,
    method: ctx.method,
    path: withQuery(path, forwardedQuery(ctx.query)),
    headers,
    body: call.body?.stream,
    idleTimeoutMs: providerTimeoutMs(call.settings, provider.id),
    secret
  }).pipe(Effect.catchTag("UpstreamError", (error) => Effect.fail(onSendFailure === undefined ? error : onSendFailure(error))))
  const answer: Answer = yield* forwardHeld({ providerId: provider.id, family: provider.family }, response, { "x-gw-upstream-provider": provider.id })
  return answer
})
