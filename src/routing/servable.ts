/**
 * Which targets of a plan can serve a request at all (spec 4.3): the
 * provider's kind must have the endpoint's capability, and a messages-style
 * provider cannot honour a JSON `response_format`. Targets that cannot are
 * skipped; when none is left the request fails with the first reason. One
 * rule for the chat program, the other model endpoints and the simulator.
 */
import { GatewayError, PROVIDER_KIND_INFO } from "../domain/index.ts"
import type { Capability } from "../domain/index.ts"
import type { PlanStep, PlanTarget } from "./plan.ts"

export interface RequestNeeds {
  readonly capability: Capability
  /** The `type` of a requested response format, when the request has one. */
  readonly responseFormat?: string | undefined
}

const DESCRIPTION: Partial<Record<Capability, string>> = {
  chat: "chat",
  embeddings: "embeddings",
  image_generation: "image generation",
  audio_speech: "text-to-speech",
  audio_transcription: "transcription",
  rerank: "rerank",
  count_tokens: "token counting",
  files: "files"
}

/** Why a target cannot serve the request, or undefined. */
export const refusalOf = (target: PlanTarget, needs: RequestNeeds): GatewayError | undefined => {
  const provider = target.provider
  if (!PROVIDER_KIND_INFO[provider.kind].capabilities.has(needs.capability)) {
    return new GatewayError({
      status: 400,
      code: "unsupported_for_model",
      message: `${DESCRIPTION[needs.capability] ?? needs.capability} is not supported by ${
        provider.family === "anthropic" ? "messages-style " : ""
      }provider "${provider.id}" (${provider.kind}, model ${target.model})`,
      param: "model"
    })
  }
  if (provider.family === "anthropic" && (needs.responseFormat === "json_object" || needs.responseFormat === "json_schema")) {
    return new GatewayError({
      status: 400,
      code: "unsupported_response_format",
      message: `response_format ${needs.responseFormat} is not supported by messages-style provider "${provider.id}"`,
      param: "response_format"
    })
  }
  return undefined
}

/** The steps with unservable targets removed, or the first refusal when nothing is left. */
export const servableSteps = (steps: ReadonlyArray<PlanStep>, needs: RequestNeeds): ReadonlyArray<PlanStep> | GatewayError => {
  let refusal: GatewayError | undefined
  const kept: Array<PlanStep> = []
  let changed = false
  for (const step of steps) {
    const targets = step.targets.filter((target) => {
      const reason = refusalOf(target, needs)
      refusal ??= reason
      return reason === undefined
    })
    if (targets.length !== step.targets.length) changed = true
    if (targets.length > 0) kept.push(targets.length === step.targets.length ? step : { ...step, targets })
  }
  if (kept.length === 0) return refusal ?? new GatewayError({ status: 400, code: "unsupported_for_model", message: "no target can serve this request", param: "model" })
  return changed ? kept : steps
}
