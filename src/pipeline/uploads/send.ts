/**
 * One upstream call whose request body is the caller's own stream (file
 * uploads, passthrough): sent once, never retried, because a consumed stream
 * cannot be replayed.
 *
 * Details
 * - The provider's timeout bounds the wait for the response head, counted
 *   from the moment the request body has been sent in full, so a large upload
 *   over a slow link is not cut off by a timeout meant for the answer.
 * - After the head, the same timeout bounds every gap between two response
 *   chunks (the transport's idle timer).
 * - Interrupting the call (the caller went away) aborts the upstream request.
 */
import { Effect } from "effect"
import type { Readable } from "node:stream"
import type { GatewaySettings } from "../../config/index.ts"
import { UpstreamError } from "../../domain/index.ts"
import type { ProviderClient, UpstreamCall, UpstreamResponse } from "../../providers/transport.ts"
import { DEFAULT_TIMEOUT_MS } from "../../routing/plan.ts"

/** A provider's timeout outside any model or target: provider, then `[defaults.provider]`, then 30000 ms. */
export const providerTimeoutMs = (settings: GatewaySettings, providerId: string): number =>
  settings.providers.get(providerId)?.timeoutMs ?? settings.file.defaults.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS

const untilEnded = (body: Readable): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (body.readableEnded) {
      resume(Effect.void)
      return
    }
    const ended = () => resume(Effect.void)
    body.once("end", ended)
    return Effect.sync(() => {
      body.off("end", ended)
    })
  })

export const sendStreamingOnce = (
  client: ProviderClient["Service"],
  call: UpstreamCall,
  timeoutMs: number,
  upload: Readable | undefined
): Effect.Effect<UpstreamResponse, UpstreamError> => {
  const timedOut = new UpstreamError({
    reason: "upstream",
    upstreamStatus: 0,
    provider: call.providerId,
    family: call.family,
    message: `no response within ${timeoutMs} ms`,
    timedOut: true,
    reached: true,
    retryAfter: undefined
  })
  const deadline = (upload === undefined ? Effect.void : untilEnded(upload)).pipe(
    Effect.andThen(Effect.sleep(timeoutMs)),
    Effect.andThen(Effect.fail(timedOut))
  )
  return Effect.raceFirst(client.send(call), deadline)
}
