/**
 * The commit rule as one operator: both chat paths (the fast path's forwarded
 * bytes, the normalized path's translation) go through `commitStream`. A
 * stream that breaks before its first content fails the attempt (what routing
 * fails over on) and nothing reaches the caller; one that breaks after it is a
 * reply whose body ends with the in-band error frame. The body is a value
 * read here without any socket.
 */
import { Effect, Exit, Layer, Result, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { UpstreamError } from "../../../src/domain/index.ts"
import { CALLER_CODECS, PROVIDER_CODECS } from "../../../src/formats/index.ts"
import { chatStreamGate } from "../../../src/pipeline/chat/fast.ts"
import { ResponseCollector } from "../../../src/pipeline/chat/collector.ts"
import { translateStage } from "../../../src/pipeline/chat/normalized.ts"
import { commitStream, forwardStage, inBandFailure } from "../../../src/pipeline/forward/index.ts"
import type { StreamStage } from "../../../src/pipeline/forward/index.ts"
import type { RequestContext } from "../../../src/pipeline/index.ts"
import { layerTest, TestReply } from "../../../src/providers/testing.ts"
import { ProviderClient } from "../../../src/providers/transport.ts"
import type { UpstreamCall } from "../../../src/providers/transport.ts"

const ctxOf = (): RequestContext => ({ log: {}, requestId: "req-1" } as unknown as RequestContext)

const request = Result.getOrThrow(CALLER_CODECS.openai.decodeRequest({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }))

/** Each path's stage for an OpenAI caller: the fast path reads OpenAI frames, the normalized path Anthropic ones. */
const PATHS: ReadonlyArray<{
  readonly name: string
  readonly upstream: "openai" | "anthropic"
  /** Frames before the first content (role chunk; message_start and content_block_start). */
  readonly opening: number
  readonly stage: (ctx: RequestContext) => StreamStage
}> = [
  {
    name: "fast path",
    upstream: "openai",
    opening: 1,
    stage: (ctx) => forwardStage(ctx, "openai", chatStreamGate("openai", new ResponseCollector(undefined, false)))
  },
  {
    name: "normalized path",
    upstream: "anthropic",
    opening: 2,
    stage: (ctx) =>
      translateStage({
        ctx,
        providerId: "claude",
        providerFamily: "anthropic",
        provider: PROVIDER_CODECS.anthropic,
        caller: CALLER_CODECS.openai,
        request,
        headers: {},
        collector: new ResponseCollector(undefined, false)
      })
  }
]

const CALL: UpstreamCall = { providerId: "up", family: "openai", origin: "http://127.0.0.1:1", method: "POST", path: "/", headers: {}, idleTimeoutMs: 1000 }

/** One attempt against a scripted upstream: the operator's verdict, and the body's text when it committed. */
const attempt = (path: typeof PATHS[number], reply: TestReply) =>
  Effect.gen(function*() {
    const client = yield* ProviderClient
    const ctx = ctxOf()
    const exit = yield* Effect.exit(Effect.scoped(Effect.gen(function*() {
      const response = yield* client.send(CALL)
      const body = yield* commitStream(ctx, response.body, path.stage(ctx), (error) => inBandFailure({ providerId: "up", family: path.upstream }, error))
      const chunks = yield* Stream.runCollect(body)
      return Buffer.concat([...chunks]).toString("utf8")
    })))
    return exit
  }).pipe(Effect.provide(layerTest(() => reply) as Layer.Layer<ProviderClient>))

describe("the commit rule, one operator on both chat paths", () => {
  for (const path of PATHS) {
    it(`${path.name}: a break before the first content fails the attempt (routing fails over); after it, the body ends with the in-band error frame`, async () => {
      // Only the opening frames, then the connection breaks.
      const early = await Effect.runPromise(attempt(path, TestReply.chatStream(path.upstream, ["Hello", " world"], { failAfter: path.opening })))
      expect(Exit.isFailure(early)).toBe(true)
      if (Exit.isFailure(early)) {
        const reason = early.cause.reasons[0]
        expect(reason?._tag).toBe("Fail")
        expect(reason?._tag === "Fail" && reason.error instanceof UpstreamError).toBe(true)
      }

      // The opening frames and the first piece of content, then the break.
      const late = await Effect.runPromise(attempt(path, TestReply.chatStream(path.upstream, ["Hello", " world"], { failAfter: path.opening + 1 })))
      expect(Exit.isSuccess(late)).toBe(true)
      const text = Exit.isSuccess(late) ? late.value : ""
      expect(text).toContain("Hello")
      expect(text).not.toContain(" world")
      expect(text).toContain("upstream stream failed")
      expect(text).not.toContain("[DONE]")

      // Whole: committed and ended cleanly.
      const whole = await Effect.runPromise(attempt(path, TestReply.chatStream(path.upstream, ["Hello", " world"])))
      expect(Exit.isSuccess(whole) ? whole.value : "").toContain(" world")
    })
  }
})
