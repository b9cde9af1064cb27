/**
 * The seam of a continued stream: the continuation request (prefill or the
 * continuation message), the trimming of a continuation that starts over, and
 * usage summed over both upstream calls.
 */
import { describe, expect, it } from "vitest"
import type { ChatRequest } from "../../../src/domain/index.ts"
import { CONTINUE_PROMPT, continuationRequest, SeamTrim, sumUsage } from "../../../src/pipeline/chat/continuation.ts"

const request: ChatRequest = {
  model: "m",
  system: [],
  messages: [{ role: "user", content: [{ type: "text", text: "tell me" }] }],
  stream: true,
  includeUsage: false,
  unmapped: {},
  untranslatable: []
}

/** What the caller gets of `pieces` after `sent`. */
const through = (sent: string, prefilled: boolean, pieces: ReadonlyArray<string>) => {
  const trim = new SeamTrim(sent, prefilled)
  return pieces.map((piece) => trim.push(piece)).join("") + trim.flush()
}

describe("the continuation request", () => {
  it("prefills a provider that can (the text without its trailing whitespace as the last assistant message)", () => {
    expect(continuationRequest(request, "The quick ", true).messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "text", text: "The quick" }] }
    ])
  })

  it("otherwise sends the text as an assistant message and asks to continue", () => {
    expect(continuationRequest(request, "The quick ", false).messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "text", text: "The quick " }] },
      { role: "user", content: [{ type: "text", text: CONTINUE_PROMPT }] }
    ])
  })

  it("extends a caller's own prefill rather than adding a second assistant message", () => {
    const prefilled: ChatRequest = { ...request, messages: [...request.messages, { role: "assistant", content: [{ type: "text", text: "{" }] }] }
    expect(continuationRequest(prefilled, "\"a\": 1", true).messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "text", text: "{" }, { type: "text", text: "\"a\": 1" }] }
    ])
  })

  it("with no text sent yet, asks the original request again", () => {
    expect(continuationRequest(request, "", false)).toBe(request)
  })
})

describe("the seam", () => {
  it("passes a continuation that goes on from the cut", () => {
    expect(through("The quick ", false, ["brown ", "fox."])).toBe("brown fox.")
  })

  it("drops a restart: the text already sent, repeated, in pieces of any size", () => {
    expect(through("The quick ", false, ["The", " qu", "ick brown ", "fox."])).toBe("brown fox.")
  })

  it("keeps a continuation that only begins like the text sent", () => {
    expect(through("The quick ", false, ["The", "n it ended."])).toBe("Then it ended.")
  })

  it("does not send twice the whitespace a prefill left out", () => {
    expect(through("The quick ", true, [" brown"])).toBe("brown")
    expect(through("The quick ", true, ["brown"])).toBe("brown")
  })

  it("releases what it held when the continuation moves on or ends", () => {
    expect(through("The quick ", false, ["The"])).toBe("The")
  })
})

describe("usage over both calls", () => {
  it("adds every count, keeping one side's optional counts", () => {
    expect(sumUsage({ inputTokens: 10, outputTokens: 3, cacheReadTokens: 2 }, { inputTokens: 20, outputTokens: 4, reasoningTokens: 1 })).toEqual({
      inputTokens: 30,
      outputTokens: 7,
      cacheReadTokens: 2,
      cacheWriteTokens: undefined,
      reasoningTokens: 1
    })
    expect(sumUsage(undefined, { inputTokens: 1, outputTokens: 1 })).toEqual({ inputTokens: 1, outputTokens: 1 })
  })
})
