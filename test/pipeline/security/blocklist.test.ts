/**
 * The blocklist automaton, the surfaces the guardrail reads, and the compiled
 * policy: substring matches across case (Unicode too), every term in one
 * pass however many there are, and every text piece of every request shape
 * the official SDKs send.
 */
import { describe, expect, it } from "vitest"
import { compileBlocklist } from "../../../src/pipeline/security/blocklist.ts"
import { compileGuardPolicy } from "../../../src/pipeline/security/Guardrail.ts"
import { visitText } from "../../../src/pipeline/security/surfaces.ts"
import type { Surface } from "../../../src/pipeline/security/surfaces.ts"
import { randomWords } from "../../fixtures/words.ts"

describe("blocklist", () => {
  it("matches a term as a case-insensitive substring, inside a longer word too", () => {
    const blocklist = compileBlocklist(["forbidden", "Project Falcon"])
    expect(blocklist.matches("this is FORBIDDEN")).toBe(true)
    expect(blocklist.matches("unforbiddenly so")).toBe(true)
    expect(blocklist.matches("about project falcon's budget")).toBe(true)
    expect(blocklist.matches("project  falcon")).toBe(false)
    expect(blocklist.matches("forbid den")).toBe(false)
    expect(blocklist.matches("")).toBe(false)
  })

  it("folds Unicode case: ß and SS, final sigma, accented capitals, the Kelvin sign", () => {
    const blocklist = compileBlocklist(["straße", "ΣΟΦΊΑΣ", "ÉLÉPHANT", "kilo"])
    expect(blocklist.matches("STRASSE 5")).toBe(true)
    expect(blocklist.matches("Strasse")).toBe(true)
    expect(blocklist.matches("η σοφίας")).toBe(true)
    expect(blocklist.matches("éléphant rose")).toBe(true)
    expect(blocklist.matches("\u212Ailo")).toBe(true)
    expect(blocklist.matches("elephant")).toBe(false)
  })

  it("matches by full Unicode case folding: STRAẞE for Straße, a final sigma inside a longer word, dotless ı apart from i", () => {
    const blocklist = compileBlocklist(["Straße", "ΟΔΌΣ", "kıt"])
    expect(blocklist.matches("Hauptstraße")).toBe(true)
    expect(blocklist.matches("HAUPTSTRAẞE 5")).toBe(true) // ẞ folds to ss, like ß
    expect(blocklist.matches("HAUPTSTRASSE 5")).toBe(true)
    expect(blocklist.matches("το οδόστρωμα")).toBe(true) // the term's final ς matches a σ inside a word
    expect(blocklist.matches("ΟΔΌΣΤΡΩΜΑ")).toBe(true)
    expect(blocklist.matches("η οδός")).toBe(true)
    expect(blocklist.matches("KIT")).toBe(false) // ı has no case pair with I in Unicode's folding (only the Turkic one)
    expect(blocklist.matches("kit")).toBe(false)
    expect(blocklist.matches("kıt kanaat")).toBe(true)
    // A term given with ẞ or a medial-position capital sigma folds the same way.
    const capitals = compileBlocklist(["STRAẞE", "ΛΌΓΟΣ"])
    expect(capitals.matches("strasse")).toBe(true)
    expect(capitals.matches("straße")).toBe(true)
    expect(capitals.matches("ο λόγος")).toBe(true)
    expect(capitals.matches("λόγοσ")).toBe(true)
  })

  it("matches when the non-ASCII character comes after a partial match in the ASCII part", () => {
    const blocklist = compileBlocklist(["abcdé", "straße"])
    expect(blocklist.matches("xx ABCDÉ")).toBe(true)
    expect(blocklist.matches("a STRAẞE")).toBe(true)
    expect(blocklist.matches("abcd é")).toBe(false)
  })

  it("finds a term among 10,000 with overlapping prefixes and suffixes (Aho–Corasick failure links)", () => {
    const terms = [...randomWords(10_000, 7), "abcde", "bcdx", "cdxyz"]
    const blocklist = compileBlocklist(terms)
    expect(blocklist.size).toBe(terms.length)
    expect(blocklist.matches("zz abcdxyz zz")).toBe(true) // abcd fails at x, bcdx follows through the failure link
    for (const term of terms.slice(0, 200)) expect(blocklist.matches(`prefix ${term.toUpperCase()} suffix`)).toBe(true)
    expect(blocklist.matches("the quick brown fox jumps over the lazy dog ".repeat(50))).toBe(false)
  })

  it("an empty list, and empty terms, match nothing", () => {
    expect(compileBlocklist([]).matches("anything at all")).toBe(false)
    expect(compileBlocklist([""]).matches("anything at all")).toBe(false)
  })
})

describe("surfaces: every text piece of every request shape", () => {
  const pieces = (surface: Surface, json: Record<string, unknown>): Array<string> => {
    const seen: Array<string> = []
    visitText(surface, json, (text) => {
      seen.push(text)
      return false
    })
    return seen
  }

  it("chat completions: string and part content, system and developer, tool results, assistant text", () => {
    expect(pieces("chat_completions", {
      model: "m",
      messages: [
        { role: "system", content: "sys" },
        { role: "developer", content: [{ type: "text", text: "dev" }] },
        { role: "user", content: [{ type: "text", text: "u1" }, { type: "image_url", image_url: { url: "https://x" } }] },
        { role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }], refusal: "no" },
        { role: "tool", tool_call_id: "c", content: "result" }
      ]
    })).toEqual(["sys", "dev", "u1", "no", "result"])
  })

  it("messages and count_tokens: system string or blocks, text blocks, tool results, text documents", () => {
    const body = {
      system: [{ type: "text", text: "sys" }],
      messages: [
        { role: "user", content: "u1" },
        { role: "assistant", content: [{ type: "text", text: "a1" }, { type: "tool_use", id: "t", name: "f", input: {} }] },
        { role: "user", content: [
          { type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "tr" }] },
          { type: "document", source: { type: "text", media_type: "text/plain", data: "doc" } }
        ] }
      ]
    }
    expect(pieces("messages", body)).toEqual(["sys", "u1", "a1", "tr", "doc"])
    expect(pieces("count_tokens", { ...body, system: "plain" })).toEqual(["plain", "u1", "a1", "tr", "doc"])
  })

  it("responses: instructions, input string or items, function call outputs", () => {
    expect(pieces("responses", { instructions: "ins", input: "just text" })).toEqual(["ins", "just text"])
    expect(pieces("responses", {
      input: [
        { role: "user", content: [{ type: "input_text", text: "q" }] },
        { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c", output: "out" },
        { role: "assistant", content: [{ type: "output_text", text: "prev" }] }
      ]
    })).toEqual(["q", "out", "prev"])
  })

  it("embeddings (strings, not token ids), images, speech, rerank", () => {
    expect(pieces("embeddings", { input: "one" })).toEqual(["one"])
    expect(pieces("embeddings", { input: ["a", "b"] })).toEqual(["a", "b"])
    expect(pieces("embeddings", { input: [1, 2, 3] })).toEqual([])
    expect(pieces("image_generation", { prompt: "a cat" })).toEqual(["a cat"])
    expect(pieces("audio_speech", { input: "say", instructions: "softly", voice: "alloy" })).toEqual(["say", "softly"])
    expect(pieces("rerank", { query: "q", documents: ["d1", { text: "d2" }] })).toEqual(["q", "d1", "d2"])
  })
})

describe("the compiled policy", () => {
  it("reports a PII category or a blocklist match, never the text, and stops at the first", () => {
    const policy = compileGuardPolicy({ enabled: true, blocklist: ["codename"], output_guardrails: true })
    expect(policy.scanRequest("chat_completions", { messages: [{ role: "user", content: "mail a@example.com" }] })).toBe("email")
    expect(policy.scanRequest("chat_completions", { messages: [{ role: "user", content: "the CODENAME is" }] })).toBe("blocklist")
    expect(policy.scanRequest("chat_completions", { messages: [{ role: "user", content: "all clear" }] })).toBeUndefined()
    expect(policy.output).toBe(true)
  })

  it("a disabled section compiles to a policy that checks nothing", () => {
    const policy = compileGuardPolicy({ enabled: false, blocklist: ["x"], output_guardrails: true })
    expect(policy.enabled).toBe(false)
    expect(policy.output).toBe(false)
    expect(policy.scanText("x a@example.com")).toBeUndefined()
  })
})
