/**
 * The model programs take their services from the Effect context: a test
 * builds one program with the layers it wants (a scripted provider, an
 * in-memory cache, telemetry in memory) and runs requests through it, with no
 * gateway, router or socket around it.
 */
import { Effect, Layer, Result, Stream } from "effect"
import type { Scope } from "effect"
import { describe, expect, it } from "vitest"
import { settingsFromDocument } from "../../src/config/index.ts"
import { Log } from "../../src/infra/log.ts"
import { Guardrail, jsonBody, makeChatProgram, makeProxyProgram, ResponseCache, Telemetry, telemetrySettingsOf } from "../../src/pipeline/index.ts"
import type { MemoryStore, ModelServices, Reply, RequestContext } from "../../src/pipeline/index.ts"
import { TelemetryMemory } from "../../src/pipeline/telemetry/memory.ts"
import { layerTest, TestReply } from "../../src/providers/testing.ts"
import type { UpstreamCall } from "../../src/providers/transport.ts"
import { compileProject, STATIC_IDENTITY } from "../../src/tenancy/project.ts"

const settings = (() => {
  const document = {
    server: {},
    providers: { openai: { models: ["gpt-4o", "text-embedding-3-small"] } },
    cache: { enabled: true, default_mode: "always", encrypt_salt: "model-programs-test-salt" }
  }
  const result = settingsFromDocument(document, { OPENAI_API_KEY: "sk-test-programs-0123456789" }, "<test>")
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
})()

const project = Effect.runSync(
  Effect.map(Effect.service(Guardrail), (guardrail) => compileProject(settings, STATIC_IDENTITY, { guard: guardrail.compile })).pipe(Effect.provide(Guardrail.layer))
)

const contextOf = (path: string): RequestContext => ({
  req: { headers: {}, complete: true },
  requestId: "req-programs",
  startedAt: performance.now(),
  method: "POST",
  path,
  query: "",
  params: {},
  caller: "openai",
  replyHeaders: undefined,
  log: {}
})

/** A scripted provider, a cache in memory (shared by the requests of one test), telemetry and log in memory. */
const servicesLayer = (answer: (call: UpstreamCall) => TestReply, calls: Array<UpstreamCall>, store: MemoryStore): Layer.Layer<ModelServices> => {
  const log = Log.layerTest([])
  return Layer.mergeAll(
    layerTest(answer, calls),
    ResponseCache.layerTest(store).pipe(Layer.provide(log)),
    Telemetry.layerTest(telemetrySettingsOf(settings.file), new TelemetryMemory()).pipe(Layer.provide(log)),
    log
  )
}

/** The reply's body as text, read to its end. */
const text = (reply: Reply): Effect.Effect<string, unknown> =>
  typeof reply.body === "string" || reply.body instanceof Uint8Array
    ? Effect.succeed(Buffer.from(reply.body).toString("utf8"))
    : Effect.map(Stream.runCollect(reply.body), (chunks) => Buffer.concat([...chunks]).toString("utf8"))

/**
 * The same request twice, each time through a program built for it from the
 * test's layers (one store shared): the first goes to the scripted provider, the
 * second is answered from the store without a call.
 */
const answeredThenCached = async (
  path: string,
  answer: TestReply,
  program: (ctx: RequestContext) => Effect.Effect<Reply, unknown, ModelServices | Scope.Scope>,
  expected: string
) => {
  const calls: Array<UpstreamCall> = []
  const store: MemoryStore = { values: new Map(), down: false }
  const ask = (ctx: RequestContext) =>
    Effect.runPromise(Effect.flatMap(program(ctx), (reply) => Effect.map(text(reply), (body) => ({ status: reply.status, body }))).pipe(
      Effect.scoped,
      Effect.provide(servicesLayer(() => answer, calls, store))
    ))
  for (const expectedCache of ["miss", "hit"]) {
    const ctx = contextOf(path)
    const { status, body } = await ask(ctx)
    expect(status).toBe(200)
    expect(body).toContain(expected)
    expect(ctx.log.cache).toBe(expectedCache)
    expect(calls.map((call) => call.providerId)).toEqual(["openai"])
    expect(store.values.size).toBe(1)
  }
}

describe("model programs built from the services in the context", () => {
  it("a chat program built with a scripted provider and an in-memory cache answers, then answers the same request from that cache", async () => {
    const answer = TestReply.json(200, {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "gpt-4o",
      choices: [{ index: 0, message: { role: "assistant", content: "scripted hello" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }
    })
    const json = { model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }
    const raw = Buffer.from(JSON.stringify(json))
    await answeredThenCached("/v1/chat/completions", answer, (ctx) =>
      Effect.flatMap(makeChatProgram, (run) => run({ ctx, project, caller: "openai", raw, json, model: json.model, stream: false })), "scripted hello")
  })

  it("an embeddings program built with a scripted provider and an in-memory cache answers, then answers the same request from that cache", async () => {
    const answer = TestReply.json(200, { object: "list", data: [{ object: "embedding", index: 0, embedding: [0.5, 0.25] }], model: "text-embedding-3-small" })
    const json = { model: "text-embedding-3-small", input: "hi" }
    const raw = Buffer.from(JSON.stringify(json))
    await answeredThenCached("/v1/embeddings", answer, (ctx) =>
      Effect.flatMap(makeProxyProgram, (run) =>
        run({
          ctx,
          project,
          operation: "embeddings",
          endpoint: "embeddings",
          capability: "embeddings",
          model: json.model,
          body: jsonBody(raw, json, json.model),
          family: "openai",
          scan: { surface: "embeddings", json }
        })), "0.25")
  })
})
