/**
 * The fast path's stream gate (src/pipeline/chat/fast.ts) when nothing reads
 * the answer's text (no output guardrail, cache, tap or splice): once the
 * answer committed and its first token was timed, its text chunks are checked
 * and dropped, not decoded. What the request reports, and where a stream
 * breaks, must not change.
 */
import { describe, expect, it } from "vitest"
import type { StreamBreak } from "../../../src/pipeline/forward/index.ts"
import { ResponseCollector } from "../../../src/pipeline/chat/collector.ts"
import { chatStreamGate } from "../../../src/pipeline/chat/fast.ts"

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-g", object: "chat.completion.chunk", created: 5, model: "gpt-x", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`

const usage = `data: ${JSON.stringify({ id: "chatcmpl-g", object: "chat.completion.chunk", created: 5, model: "gpt-x", choices: [], usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 } })}\n\n`

const body = (texts: ReadonlyArray<string>, tail = chunk({}, "stop") + usage + "data: [DONE]\n\n") =>
  chunk({ role: "assistant", content: "" }) + texts.map((content) => chunk({ content })).join("") + tail

/** Pushes `text` in one read; what the gate said, and what the collector holds. */
const run = (text: string, collector: ResponseCollector) => {
  const gate = chatStreamGate("openai", collector)
  const verdict = gate.push(Buffer.from(text))
  const end = typeof verdict === "object" ? undefined : gate.end()
  const cut: StreamBreak | undefined = typeof verdict === "object" ? verdict : end
  return { verdict: typeof verdict === "object" ? "break" : verdict, cut, id: collector.id, model: collector.model, stopReason: collector.stopReason, usage: collector.usage, timed: collector.firstTokenAt !== undefined, error: collector.error }
}

/** No guardrail, no cache, no tap: nothing reads the text. */
const unread = () => new ResponseCollector(undefined, false)

describe("the fast path's gate, when nothing reads the text", () => {
  it("reports the id, model, finish, usage and first token as a gate that reads it", () => {
    const text = body(["Hi", " there", " \"quoted\" 😀", "\n", " end"])
    const reading = new ResponseCollector(undefined, true, undefined, true)
    expect(run(text, unread())).toEqual(run(text, reading))
    expect(reading.text).toBe("Hi there \"quoted\" 😀\n end")
    expect(reading.tapped?.filter((event) => event.type === "text_delta")).toHaveLength(5)
    expect(run(text, unread())).toMatchObject({ verdict: "commit", cut: undefined, id: "chatcmpl-g", stopReason: "end_turn", usage: { inputTokens: 4, outputTokens: 3 }, timed: true })
  })

  it("a text chunk it drops that is malformed still breaks the stream there, as when it reads it", () => {
    for (const bad of ["he\\xllo", "he\\u12", "tab\there"]) {
      const good = chunk({ content: "again" })
      const broken = good.replace("again", bad)
      const text = body(["Hi", " there"], broken + chunk({}, "stop") + "data: [DONE]\n\n")
      const dropped = run(text, unread())
      expect(dropped, bad).toEqual(run(text, new ResponseCollector(undefined, true, undefined, true)))
      expect(dropped.verdict).toBe("break")
      expect(dropped.cut).toMatchObject({ eventsBefore: 3, committed: true, error: { malformed: true } })
    }
  })

  it("with a guardrail, a cache or a tap every text delta is read", () => {
    const texts = ["a", "b", "c", "d"]
    for (const collector of [new ResponseCollector(undefined, true), new ResponseCollector(1 << 20, false), new ResponseCollector(undefined, false, undefined, true)]) {
      run(body(texts), collector)
      if (collector.keeping) expect(collector.assembler?.result()?.content).toEqual([{ type: "text", text: "abcd" }])
      else if (collector.tapped !== undefined) expect(collector.tapped.filter((event) => event.type === "text_delta").map((event) => event.text)).toEqual(texts)
      else expect(collector.text).toBe("abcd")
    }
  })
})
