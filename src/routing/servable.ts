/**
 * Which targets of a plan can serve a request at all (docs/reference/gateway-spec.md §4.3): the
 * provider's kind must have the endpoint's capability; a messages-style
 * provider cannot honour another format's JSON `response_format`; and a
 * request with fields another wire format cannot carry (server-side state,
 * hosted tools) can only go to a provider that speaks the caller's format
 * natively. Targets that cannot are skipped; when none is left the request
 * fails with the first reason. One rule for the chat program, the other model
 * endpoints and the simulator.
 */
import { Result } from "effect"
import { GatewayError, PROVIDER_KIND_INFO } from "../domain/index.ts"
import type { CallerFormat, Capability } from "../domain/index.ts"
import type { CompiledProvider } from "../providers/adapter.ts"
import type { PlanStep, PlanTarget, StepsShape } from "./plan.ts"

export interface RequestNeeds {
  readonly capability: Capability
  /** The `type` of a requested response format, when the request has one. */
  readonly responseFormat?: string | undefined
  /** The format a chat caller speaks. */
  readonly caller?: CallerFormat | undefined
  /** The caller's field that asked for the response format (`response_format`, `text.format`). */
  readonly responseFormatParam?: string | undefined
  /** Caller fields that only a provider speaking the caller's format can honour. */
  readonly untranslatable?: ReadonlyArray<string> | undefined
}

/**
 * Whether a provider answers a chat caller in the caller's own format, bytes
 * forwarded as they are (the fast path): the same wire family, or the
 * provider's own Responses API for a Responses caller.
 */
export const speaksNatively = (caller: CallerFormat, provider: CompiledProvider): boolean =>
  caller === "responses" ? provider.responsesApi : provider.family === caller

/** What a list of steps is, whatever the request: computed once, when the plan is compiled. */
export const shapeOf = (steps: ReadonlyArray<PlanStep>): StepsShape => {
  const providers = steps.flatMap((step) => step.targets.map((target) => target.provider))
  const all = (caller: CallerFormat) => providers.every((provider) => speaksNatively(caller, provider))
  return {
    hasNonChat: providers.some((provider) => provider.family === "other"),
    allNative: { openai: all("openai"), anthropic: all("anthropic"), responses: all("responses") }
  }
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
  const native = needs.caller !== undefined && speaksNatively(needs.caller, provider)
  if (
    provider.family === "anthropic" && !native &&
    (needs.responseFormat === "json_object" || needs.responseFormat === "json_schema")
  ) {
    const param = needs.responseFormatParam ?? "response_format"
    return new GatewayError({
      status: 400,
      code: "unsupported_response_format",
      message: `${param} ${needs.responseFormat} is not supported by messages-style provider "${provider.id}"`,
      param
    })
  }
  const lost = native ? undefined : needs.untranslatable?.[0]
  if (lost !== undefined) {
    return new GatewayError({
      status: 400,
      code: "unsupported_for_model",
      message: `${lost} cannot be carried to provider "${provider.id}" (${provider.kind}, model ${target.model}): it works only with a provider that speaks this API natively${STORE_HINT[lost] ?? ""}`,
      param: lost
    })
  }
  return undefined
}

/** What turns a refusal of Responses state into a served request: the gateway's own store (`[responses]`). */
const STORE_HINT: Readonly<Record<string, string>> = {
  previous_response_id: ", or with the gateway's Responses store turned on ([responses] enabled = true)",
  "input[].item_reference": ", or with the gateway's Responses store turned on ([responses] enabled = true)"
}

/** The steps with unservable targets removed, or the first refusal when nothing is left. */
export const servableSteps = (steps: ReadonlyArray<PlanStep>, needs: RequestNeeds): Result.Result<ReadonlyArray<PlanStep>, GatewayError> => {
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
  if (kept.length === 0) {
    return Result.fail(refusal ?? new GatewayError({ status: 400, code: "unsupported_for_model", message: "no target can serve this request", param: "model" }))
  }
  return Result.succeed(changed ? kept : steps)
}
