/** A canonical chat request for format tests: one user turn, overridden field by field. */
import type { ChatRequest } from "../../src/domain/chat.ts"

export const chatRequest = (over: Partial<ChatRequest>): ChatRequest => ({
  model: "m",
  system: [],
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  stream: false,
  includeUsage: false,
  unmapped: {},
  untranslatable: [],
  ...over
})
