/**
 * Failures after the first byte of a stream (docs/reference/gateway-spec.md §6.1.5): the HTTP status stays 200,
 * the caller gets the error frame of its own format and no success terminator after it.
 * Covered on the fast path (same format) and the normalized path (translated): the
 * upstream dropping the connection, an in-band error event, and a silence between two
 * chunks longer than the timeout. Also: a caller that goes away mid-stream makes the
 * gateway close the upstream connection.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { anthropicEvent, anthropicStartMessage, anthropicStreamError, openAiChunk, openAiStreamError, SSE_DONE } from "../fixtures/fake-upstream.ts"
import { gatewayWithFakes } from "./harness.ts"

type Family = "openai" | "anthropic"
type Json = Record<string, any>

const { fakes, gateway: gw } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  (fakes) => ({
    providers: {
      openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o", "gpt-4o-patient"], credential: "none", timeout_ms: 300 },
      anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e-model", "claude-patient"], credential: "none", timeout_ms: 300 }
    },
    // The "patient" models never time out during a test: only the caller can end their streams.
    models: { "gpt-4o-patient": { timeout_ms: 20000 }, "claude-patient": { timeout_ms: 20000 } },
    routing: { retry: { max_retries: 0 } }
  })
)

// ---------------------------------------------------------------------------
// Upstream frames and raw SSE reading
// ---------------------------------------------------------------------------

/** The start of an OpenAI stream: role chunk and two content pieces ("Hel" + "lo"), no finish. */
const openAiPartial = (): string[] => [
  openAiChunk({ role: "assistant", content: "", refusal: null }, { model: "gpt-4o", id: "chatcmpl-mid" }),
  openAiChunk({ content: "Hel" }, { model: "gpt-4o", id: "chatcmpl-mid" }),
  openAiChunk({ content: "lo" }, { model: "gpt-4o", id: "chatcmpl-mid" })
]

/** The start of an Anthropic stream: message_start, a text block and two deltas, no stop. */
const anthropicPartial = (): string[] => [
  anthropicEvent("message_start", { message: anthropicStartMessage({ id: "msg_mid", model: "claude-e2e-model", blocks: [] }) }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hel" } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "lo" } })
]

const partialFor = (provider: Family) => (provider === "openai" ? openAiPartial() : anthropicPartial())
const fakeOf = (provider: Family) => (provider === "openai" ? fakes.openai : fakes.anthropic)
const modelOf = (provider: Family, patient = false) =>
  provider === "openai" ? (patient ? "gpt-4o-patient" : "gpt-4o") : patient ? "claude-patient" : "claude-e2e-model"

interface Frame {
  event: string | undefined
  data: string
}

interface RawStream {
  status: number
  contentType: string | null
  text: string
  frames: Frame[]
  /** The body ended (false: reset, or still open after the read's time limit). */
  ended: boolean
}

const parseFrames = (text: string): Frame[] =>
  text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== "")
    .map((block) => {
      let event: string | undefined
      const data: string[] = []
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) event = line.slice(6).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      return { event, data: data.join("\n") }
    })
    .filter((frame) => frame.event !== undefined || frame.data !== "")

const requestFor = (caller: Family, model: string) =>
  caller === "openai"
    ? { path: "/v1/chat/completions", body: { model, messages: [{ role: "user", content: "hi" }], stream: true } }
    : { path: "/v1/messages", body: { model, max_tokens: 50, messages: [{ role: "user", content: "hi" }], stream: true } }

/**
 * Reads the whole streamed answer as text. A connection reset, or a body still
 * open after 5 s, ends the read, keeping what arrived (`ended` false).
 */
const rawStream = async (caller: Family, model: string): Promise<RawStream> => {
  const { path, body } = requestFor(caller, model)
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5000)
  })
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  let ended = false
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
    ended = true
  } catch {
    // A reset or the time limit: the frames that arrived are what the caller got.
  }
  return { status: res.status, contentType: res.headers.get("content-type"), text, frames: parseFrames(text), ended }
}

/** The completions-style error frame: last, `data: {"error":{...}}`, and no `[DONE]` anywhere; the body ends there. */
const expectOpenAiErrorFrameLast = (s: RawStream): Json => {
  expect(s.status).toBe(200)
  expect(s.ended).toBe(true)
  expect(s.contentType).toContain("text/event-stream")
  expect(s.text).not.toContain("[DONE]")
  const last = s.frames[s.frames.length - 1]
  expect(last.event).toBeUndefined()
  const json = JSON.parse(last.data) as Json
  expect(Object.keys(json)).toEqual(["error"])
  expect(typeof json.error.message).toBe("string")
  expect(typeof json.error.type).toBe("string")
  // Nothing before the error claims a normal finish.
  for (const frame of s.frames.slice(0, -1)) {
    const chunk = JSON.parse(frame.data) as Json
    for (const choice of chunk.choices ?? []) expect(choice.finish_reason ?? null).toBeNull()
  }
  return json.error
}

/** The messages-style error frame: last, `event: error` + `{"type":"error","error":{...}}`, no `message_stop`; the body ends there. */
const expectAnthropicErrorFrameLast = (s: RawStream): Json => {
  expect(s.status).toBe(200)
  expect(s.ended).toBe(true)
  expect(s.contentType).toContain("text/event-stream")
  const last = s.frames[s.frames.length - 1]
  expect(last.event).toBe("error")
  const json = JSON.parse(last.data) as Json
  expect(json.type).toBe("error")
  expect(typeof json.error.type).toBe("string")
  expect(typeof json.error.message).toBe("string")
  const names = s.frames.map((f) => f.event)
  expect(names).not.toContain("message_stop")
  expect(names).not.toContain("message_delta")
  expect(names.filter((n) => n === "error")).toHaveLength(1)
  return json.error
}

const expectErrorFrameLast = (caller: Family, s: RawStream): Json =>
  caller === "openai" ? expectOpenAiErrorFrameLast(s) : expectAnthropicErrorFrameLast(s)

/** The text the caller received before the error. */
const textBefore = (caller: Family, s: RawStream): string =>
  s.frames
    .slice(0, -1)
    .map((f) => {
      const json = JSON.parse(f.data) as Json
      if (caller === "openai") return (json.choices ?? []).map((c: Json) => c.delta?.content ?? "").join("")
      return json.type === "content_block_delta" && json.delta?.type === "text_delta" ? json.delta.text : ""
    })
    .join("")

const pairs: Array<{ caller: Family; provider: Family; path: "fast" | "normalized" }> = [
  { caller: "openai", provider: "openai", path: "fast" },
  { caller: "anthropic", provider: "anthropic", path: "fast" },
  { caller: "openai", provider: "anthropic", path: "normalized" },
  { caller: "anthropic", provider: "openai", path: "normalized" }
]

// ---------------------------------------------------------------------------
// Connection dropped mid-stream, and a silence longer than the timeout
// ---------------------------------------------------------------------------

for (const { caller, provider, path } of pairs) {
  describe(`${caller} → ${provider} (${path} path) mid-stream`, () => {
    it("an upstream connection drop ends the stream with the caller's error frame and no terminator", async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider), thenError: "close" })
      const s = await rawStream(caller, modelOf(provider))
      if (caller === "openai") expectOpenAiErrorFrameLast(s)
      else expectAnthropicErrorFrameLast(s)
      expect(textBefore(caller, s)).toBe("Hello")
      if (path === "fast") expect(s.text.startsWith(partialFor(provider).join(""))).toBe(true)
    })

    it("a silence between chunks longer than timeout_ms ends the stream with the error frame, and the upstream is released", async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider), thenError: "hang" })
      const s = await rawStream(caller, modelOf(provider))
      if (caller === "openai") expectOpenAiErrorFrameLast(s)
      else expectAnthropicErrorFrameLast(s)
      expect(textBefore(caller, s)).toBe("Hello")
      await fakeOf(provider).waitForClosedEarly(1, 3000)
    })

    it("a connection dropped in the middle of a frame still ends with a well-formed error frame", async () => {
      const cut = provider === "openai" ? 'data: {"id":"chatcmpl-mid","object":"chat.comp' : 'event: content_block_delta\ndata: {"type":"content_block_delta","ind'
      fakeOf(provider).script({ kind: "sse", events: [...partialFor(provider), cut], thenError: "close" })
      const s = await rawStream(caller, modelOf(provider))
      if (caller === "openai") expectOpenAiErrorFrameLast(s)
      else expectAnthropicErrorFrameLast(s)
      // Every frame the caller got is complete JSON: the torn frame never reaches it as garbage.
      for (const frame of s.frames) expect(() => JSON.parse(frame.data), frame.data).not.toThrow()
    })

    it("an upstream that declared a content-length and drops the connection early: the stream ends at once with the error frame", async () => {
      const sent = partialFor(provider).join("")
      fakeOf(provider).script({
        kind: "custom",
        handle: async ({ res, wait }) => {
          res.writeHead(200, { "content-type": "text/event-stream", "content-length": String(Buffer.byteLength(sent) + 5000) })
          res.write(sent)
          if (await wait(50)) res.destroy()
        }
      })
      const s = await rawStream(caller, modelOf(provider))
      expectErrorFrameLast(caller, s)
      expect(textBefore(caller, s)).toBe("Hello")
    })

    it("an upstream that ends its response before the final event gets the error frame, not a silent end", async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider) })
      const s = await rawStream(caller, modelOf(provider))
      if (caller === "openai") expectOpenAiErrorFrameLast(s)
      else expectAnthropicErrorFrameLast(s)
      expect(textBefore(caller, s)).toBe("Hello")
    })

    it("a caller that goes away before the upstream answers makes the upstream connection close", async () => {
      const fake = fakeOf(provider)
      fake.script({ kind: "delay", ms: 15000 })
      const { path: urlPath, body } = requestFor(caller, modelOf(provider, true))
      const controller = new AbortController()
      const pending = fetch(`${gw.url}${urlPath}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: controller.signal
      }).catch((e: unknown) => e)
      await fake.waitForRequests(1)
      controller.abort()
      await pending
      await fake.waitForClosedEarly(1, 3000)
    })

    it("a caller that aborts mid-stream makes the upstream connection close", async () => {
      const fake = fakeOf(provider)
      fake.script({ kind: "sse", events: partialFor(provider), thenError: "hang" })
      const { path: urlPath, body } = requestFor(caller, modelOf(provider, true))
      const controller = new AbortController()
      const res = await fetch(`${gw.url}${urlPath}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: controller.signal
      })
      expect(res.status).toBe(200)
      const reader = res.body!.getReader()
      const first = await reader.read()
      expect(first.done).toBe(false)
      expect(fake.closedEarly()).toBe(0)
      controller.abort()
      await fake.waitForClosedEarly(1, 3000)
      expect(fake.requests[0].clientClosedEarly).toBe(true)
    })
  })
}

// ---------------------------------------------------------------------------
// A break inside one upstream chunk: what came before it goes out, nothing after it
// ---------------------------------------------------------------------------

/** Upstream frames of each family, continuing the partial stream above. */
const wire: Record<Family, {
  more: (text: string) => string
  malformed: string
  /** The stream's last event, sent without a finish before it. */
  unfinishedEnd: string
  error: string
  /** A normal ending: the finish and the last event. */
  finish: string[]
}> = {
  openai: {
    more: (text) => openAiChunk({ content: text }, { model: "gpt-4o", id: "chatcmpl-mid" }),
    malformed: "data: {not json\n\n",
    unfinishedEnd: SSE_DONE,
    error: openAiStreamError("boom"),
    finish: [openAiChunk({}, { model: "gpt-4o", id: "chatcmpl-mid", finishReason: "stop" }), SSE_DONE]
  },
  anthropic: {
    more: (text) => anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } }),
    malformed: "event: content_block_delta\ndata: {not json\n\n",
    unfinishedEnd: anthropicEvent("message_stop"),
    error: anthropicStreamError("overloaded_error", "boom"),
    finish: [anthropicEvent("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }), anthropicEvent("message_stop")]
  }
}

/** The upstream writes `head` frame by frame, then after a pause `tail` in one write: one chunk for the gateway. */
const scriptTailInOneChunk = (provider: Family, head: string[], tail: string[]) =>
  fakeOf(provider).script({
    kind: "custom",
    handle: async ({ res, wait }) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const frame of head) res.write(frame)
      if (await wait(50)) res.end(tail.join(""))
    }
  })

for (const { caller, provider, path } of pairs) {
  describe(`${caller} → ${provider} (${path} path): a break inside one upstream chunk`, () => {
    const w = wire[provider]

    it("the events before a malformed event in the same chunk reach the caller, then the error frame", async () => {
      const good = [w.more(" wor"), w.more("ld")]
      scriptTailInOneChunk(provider, partialFor(provider), [...good, w.malformed])
      const s = await rawStream(caller, modelOf(provider))
      expectErrorFrameLast(caller, s)
      expect(textBefore(caller, s)).toBe("Hello world")
      if (path === "fast") expect(s.text.startsWith([...partialFor(provider), ...good].join(""))).toBe(true)
    })

    it("content and an end without a finish in one chunk: the content reaches the caller, then the error frame", async () => {
      scriptTailInOneChunk(provider, partialFor(provider), [w.more(" world"), w.unfinishedEnd])
      const s = await rawStream(caller, modelOf(provider))
      expectErrorFrameLast(caller, s)
      expect(textBefore(caller, s)).toBe("Hello world")
    })

    it("a last content event the upstream ends its body in, without its blank line or a finish: the content arrives, then the error frame", async () => {
      scriptTailInOneChunk(provider, partialFor(provider), [w.more(" world").trimEnd()])
      const s = await rawStream(caller, modelOf(provider))
      expectErrorFrameLast(caller, s)
      expect(textBefore(caller, s)).toBe("Hello world")
    })

    it("content and a malformed event in the stream's first chunk: the content commits the stream as on every path, then the error frame", async () => {
      scriptTailInOneChunk(provider, [], [...partialFor(provider), w.malformed])
      const s = await rawStream(caller, modelOf(provider))
      expectErrorFrameLast(caller, s)
      expect(textBefore(caller, s)).toBe("Hello")
    })

    it("the upstream's error event ends the stream: what follows it in the same chunk never reaches the caller", async () => {
      scriptTailInOneChunk(provider, partialFor(provider), [w.more(" world"), w.error, ...w.finish])
      const s = await rawStream(caller, modelOf(provider))
      expect(expectErrorFrameLast(caller, s).message).toBe("boom")
      expect(textBefore(caller, s)).toBe("Hello world")
      if (path === "fast") expect(s.text).toBe([...partialFor(provider), w.more(" world"), w.error].join(""))
    })

    it("the upstream's error event ends the stream: an end marker sent after it (vLLM's [DONE]) never reaches the caller", async () => {
      fakeOf(provider).script({ kind: "sse", events: [...partialFor(provider), w.error, ...w.finish] })
      const s = await rawStream(caller, modelOf(provider))
      expect(expectErrorFrameLast(caller, s).message).toBe("boom")
      expect(textBefore(caller, s)).toBe("Hello")
      if (path === "fast") expect(s.text).toBe([...partialFor(provider), w.error].join(""))
    })
  })
}

// ---------------------------------------------------------------------------
// In-band error events
// ---------------------------------------------------------------------------

describe("upstream error event before any output (normalized path)", () => {
  it("Anthropic overloaded_error as the first event reaches an OpenAI caller as an HTTP 529, not a stream", async () => {
    fakes.anthropic.script({ kind: "sse", events: [anthropicStreamError("overloaded_error", "Overloaded")] })
    const { path, body } = requestFor("openai", "claude-e2e-model")
    const res = await fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    const json = (await res.json()) as Json
    expect(res.status).toBe(529)
    expect(res.headers.get("x-gw-error-code")).toBe("overloaded")
    expect(res.headers.get("x-gw-upstream-provider")).toBe("anthropic")
    expect(json.error.message).toBe("Overloaded")
  })
})

describe("upstream in-band error mid-stream", () => {
  it("Anthropic `event: error` to an OpenAI caller becomes data: {error} carrying the upstream message, no [DONE]", async () => {
    fakes.anthropic.script({ kind: "sse", events: [...anthropicPartial(), anthropicStreamError("overloaded_error", "Overloaded")] })
    const s = await rawStream("openai", "claude-e2e-model")
    const error = expectOpenAiErrorFrameLast(s)
    expect(error.message).toBe("Overloaded")
    expect(textBefore("openai", s)).toBe("Hello")
  })

  it("Anthropic `event: error` to an Anthropic caller is forwarded verbatim, nothing appended", async () => {
    const events = [...anthropicPartial(), anthropicStreamError("overloaded_error", "Overloaded")]
    fakes.anthropic.script({ kind: "sse", events })
    const s = await rawStream("anthropic", "claude-e2e-model")
    expectAnthropicErrorFrameLast(s)
    expect(s.text).toBe(events.join(""))
  })

  it("OpenAI data: {error} to an Anthropic caller becomes event: error carrying the upstream message, no message_stop", async () => {
    fakes.openai.script({ kind: "sse", events: [...openAiPartial(), openAiStreamError("The server had an error while processing your request.")] })
    const s = await rawStream("anthropic", "gpt-4o")
    const error = expectAnthropicErrorFrameLast(s)
    expect(error.message).toBe("The server had an error while processing your request.")
    expect(textBefore("anthropic", s)).toBe("Hello")
  })

  it("OpenAI data: {error} to an OpenAI caller is forwarded verbatim, nothing appended", async () => {
    const events = [...openAiPartial(), openAiStreamError("The server had an error while processing your request.")]
    fakes.openai.script({ kind: "sse", events })
    const s = await rawStream("openai", "gpt-4o")
    expectOpenAiErrorFrameLast(s)
    expect(s.text).toBe(events.join(""))
  })
})

// ---------------------------------------------------------------------------
// The SDKs notice
// ---------------------------------------------------------------------------

describe("the SDKs surface a mid-stream failure as an error", () => {
  const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "k", maxRetries: 0 })
  const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: "k", maxRetries: 0 })

  const consumeOpenAi = async (model: string) => {
    const stream = await openai().chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], stream: true })
    let text = ""
    try {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ""
    } catch (error) {
      return { text, error }
    }
    return { text, error: undefined }
  }

  for (const provider of ["openai", "anthropic"] as const) {
    it(`openai SDK: a dropped ${provider === "openai" ? "OpenAI" : "Anthropic"} upstream throws APIError after the text that arrived`, async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider), thenError: "close" })
      const { text, error } = await consumeOpenAi(modelOf(provider))
      expect(text).toBe("Hello")
      expect(error).toBeInstanceOf(OpenAI.APIError)
    })

    it(`anthropic SDK: a dropped ${provider === "openai" ? "OpenAI" : "Anthropic"} upstream makes finalMessage() reject`, async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider), thenError: "close" })
      const stream = anthropic().messages.stream({ model: modelOf(provider), max_tokens: 50, messages: [{ role: "user", content: "hi" }] })
      const seen: string[] = []
      stream.on("text", (t) => seen.push(t))
      const error = await stream.finalMessage().then(() => undefined, (e: unknown) => e)
      expect(error).toBeInstanceOf(Anthropic.APIError)
      expect(seen.join("")).toBe("Hello")
    })
  }

  for (const provider of ["openai", "anthropic"] as const) {
    it(`openai SDK: ${provider === "openai" ? "an OpenAI" : "an Anthropic"} upstream that ends early without its final event throws APIError`, async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider) })
      const { text, error } = await consumeOpenAi(modelOf(provider))
      expect(text).toBe("Hello")
      expect(error).toBeInstanceOf(OpenAI.APIError)
    })

    it(`anthropic SDK: ${provider === "openai" ? "an OpenAI" : "an Anthropic"} upstream that ends early without its final event throws APIError`, async () => {
      fakeOf(provider).script({ kind: "sse", events: partialFor(provider) })
      const stream = await anthropic().messages.create({ model: modelOf(provider), max_tokens: 50, messages: [{ role: "user", content: "hi" }], stream: true })
      let error: unknown
      try {
        for await (const _event of stream) {
          // drain
        }
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(Anthropic.APIError)
    })
  }

  it("openai SDK: an OpenAI upstream torn mid-frame throws APIError, not a JSON parse error", async () => {
    fakes.openai.script({ kind: "sse", events: [...openAiPartial(), 'data: {"id":"chatcmpl-mid","object":"chat.comp'], thenError: "close" })
    const { text, error } = await consumeOpenAi("gpt-4o")
    expect(text).toBe("Hello")
    expect(error).toBeInstanceOf(OpenAI.APIError)
  })

  it("openai SDK: an Anthropic in-band overloaded_error throws APIError with the upstream message", async () => {
    fakes.anthropic.script({ kind: "sse", events: [...anthropicPartial(), anthropicStreamError("overloaded_error", "Overloaded")] })
    const { text, error } = await consumeOpenAi("claude-e2e-model")
    expect(text).toBe("Hello")
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect((error as Error).message).toContain("Overloaded")
  })

  it("openai SDK: aborting a translated stream after the first chunk closes the upstream connection", async () => {
    fakes.anthropic.script({ kind: "sse", events: anthropicPartial(), thenError: "hang" })
    const stream = await openai().chat.completions.create({ model: "claude-patient", messages: [{ role: "user", content: "hi" }], stream: true })
    for await (const _chunk of stream) {
      stream.controller.abort()
      break
    }
    await fakes.anthropic.waitForClosedEarly(1, 3000)
  })
})
