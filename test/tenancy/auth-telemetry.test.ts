/**
 * The platform token is the credential of its request's GenAI export: a call
 * authenticated for a project is exported with that project's token, and two
 * projects' calls never share an export call.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { GatewayConfig } from "../../src/config/index.ts"
import type { GenAiCall } from "../../src/pipeline/telemetry/genai/call.ts"
import { Log } from "../../src/infra/log.ts"
import { PlatformAuth } from "../../src/tenancy/auth-exchange.ts"
import { startFakeExchange } from "../fixtures/fake-exchange.ts"
import { startOtlpReceiver } from "../fixtures/otlp-receiver.ts"
import { settingsOf, startTelemetry } from "../pipeline/telemetry/support.ts"

const call = (id: string): GenAiCall => ({
  operation: "chat",
  requestedModel: "gpt-4o",
  upstream: { providerId: "openai", kind: "openai", origin: "https://api.openai.test", model: "gpt-4o" },
  stream: false,
  response: { id, model: "gpt-4o", stopReason: "end_turn", usage: { inputTokens: 1, outputTokens: 1 } },
  timing: { startedAt: 0, endedAt: 1 }
})

describe("platform tokens as GenAI export credentials", () => {
  it("each project's calls are exported with its own token", async () => {
    const exchange = await startFakeExchange({ keys: { "pk-1": ["proj-a", "proj-b"] } })
    const collector = await startOtlpReceiver()
    const logs: Array<Record<string, unknown>> = []
    const scope = Effect.runSync(Scope.make())
    try {
      const auth = Context.get(
        await Effect.runPromise(Layer.buildWithScope(
          PlatformAuth.layer(GatewayConfig.fromDocument({ server: {}, auth: { enabled: true, exchange_url: exchange.url } }).file.auth).pipe(Layer.provide(Log.layerTest(logs))),
          scope
        )),
        PlatformAuth
      )
      const running = await startTelemetry(settingsOf({ telemetry: { enabled: false }, genai_telemetry: { enabled: true, otlp_endpoint: collector.url, otlp_bearer_token: "static" } }))
      for (const [i, project] of ["proj-a", "proj-b", "proj-a"].entries()) {
        const token = await Effect.runPromise(auth.authenticate({ "x-gw-authorization": "Bearer pk-1", "x-gw-project-id": project }))
        await running.run(running.telemetry.recordModelCall(call(`${project}-${i}`), token))
      }
      await running.run(running.telemetry.flush)
      await running.close()
      await collector.waitFor((c) => c.spans().length >= 3)
      const byToken: Record<string, Array<string>> = {}
      for (const exported of collector.calls) {
        for (const span of exported.spans) (byToken[exported.metadata.authorization] ??= []).push(span.attributes["gen_ai.response.id"] as string)
      }
      expect(byToken).toEqual({ "Bearer tok-proj-a-1": ["proj-a-0", "proj-a-2"], "Bearer tok-proj-b-2": ["proj-b-1"] })
      expect(exchange.requests).toHaveLength(2)
      expect(JSON.stringify([...logs, ...running.logs])).not.toMatch(/tok-proj|pk-1/)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await collector.close()
      await exchange.close()
    }
  })
})
