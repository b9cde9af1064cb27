/**
 * A provider's safety filter that let nothing through: Gemini's blocked prompt
 * (`promptFeedback.blockReason`) or a candidate finished `SAFETY`,
 * `PROHIBITED_CONTENT`, `BLOCKLIST`, `SPII`… with no content; Bedrock's
 * `guardrail_intervened` or `content_filtered` with no content. It is the
 * spec's `content_policy` error (docs/reference/gateway-spec.md §7.2): a 400 in the caller's
 * envelope with `x-gw-error-code: content_policy`, never retried nor failed
 * over (another target would refuse the same request).
 *
 * Once anything was answered, the block is the answer's finish
 * (`content_filter`) instead: a stream cannot take back what it sent, and a
 * whole answer ends the same way, so both paths agree on one rule: a block
 * with nothing before it fails, a block after content finishes.
 */
import type { ChatResponse, StreamError } from "../domain/chat.ts"

/** The error a block that answered nothing is; `reason` is the provider's own identifier for it. */
export const safetyBlock = (what: "prompt" | "answer", reason: string): StreamError => ({
  type: "content_policy",
  code: reason,
  message: `the provider's safety filter blocked the ${what} (${reason})`,
  status: 400
})

/** Whether a whole answer holds nothing a caller would see or keep (no text, tool call or reasoning). */
export const answeredNothing = (content: ChatResponse["content"]): boolean =>
  content.every((part) => part.type === "text" && part.text === "")
