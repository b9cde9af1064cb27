/**
 * Claude on Vertex AI answers its errors in Google's envelope
 * (`{"error":{"code":429,"message":…,"status":"RESOURCE_EXHAUSTED"}}`), not in
 * Anthropic's, though the successful answers are Anthropic's: the gateway
 * classifies them by Google's status name (docs/reference/gateway-spec.md §7.2), and an
 * Anthropic caller gets them in its own envelope, never Google's body.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import { gatewayWithFakes } from "./harness.ts"

const TOKEN = "ya29.vertex-errors-token"
const MODEL = "claude-vertex-errors"

const { fakes, gateway: gw } = gatewayWithFakes(
  { vertex: { kind: "anthropic", apiKey: TOKEN } },
  (fakes) => ({
    providers: {
      vertex: { base_url: fakes.vertex.url, project: "p", location: "us-east5", publisher: "anthropic", models: [MODEL], credential: "env::VERTEX_ERRORS_TOKEN" }
    },
    routing: { retry: { max_retries: 0 } }
  }),
  { VERTEX_ERRORS_TOKEN: TOKEN }
)

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null } })
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: null, authToken: null, maxRetries: 0, defaultHeaders: { authorization: null, "x-api-key": null } })

/** Vertex's answer to a refused rawPredict / streamRawPredict. */
const googleError = (status: number, name: string, message: string) => ({
  kind: "json" as const,
  status,
  body: { error: { code: status, message, status: name } }
})

const CASES: ReadonlyArray<readonly [status: number, name: string, message: string, callerStatus: number, code: string, anthropicType: string]> = [
  [429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude.", 429, "rate_limit", "rate_limit_error"],
  [503, "UNAVAILABLE", "The service is currently unavailable.", 529, "overloaded", "overloaded_error"],
  [401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", 401, "auth", "authentication_error"],
  [403, "PERMISSION_DENIED", "Permission 'aiplatform.endpoints.predict' denied on resource.", 403, "forbidden", "permission_error"],
  [404, "NOT_FOUND", "Publisher Model `claude-vertex-errors` was not found.", 404, "model_not_found", "not_found_error"],
  [400, "INVALID_ARGUMENT", "Request contains an invalid argument.", 400, "bad_request", "invalid_request_error"],
  [500, "INTERNAL", "Internal error encountered.", 502, "upstream", "api_error"]
]

describe("Google-shaped errors from Vertex's rawPredict", () => {
  describe.each([false, true])("stream %s", (stream) => {
    it.each(CASES)("%i %s (%s) is the caller's %i, x-gw-error-code %s, in the Anthropic envelope as %s", async (status, name, message, callerStatus, code, anthropicType) => {
      fakes.vertex.script(googleError(status, name, message))
      const params = { model: MODEL, max_tokens: 10, messages: [{ role: "user" as const, content: "hi" }], stream }
      const error = await anthropic().messages.create(params).then(() => undefined, (e: unknown) => e as InstanceType<typeof Anthropic.APIError>)
      expect(error).toBeInstanceOf(Anthropic.APIError)
      expect({ status: error!.status, code: error!.headers?.get("x-gw-error-code") }).toEqual({ status: callerStatus, code })
      expect((error!.error as { type?: string }).type).toBe("error")
      expect((error!.error as { error?: { type?: string } }).error?.type).toBe(anthropicType)
      expect(fakes.vertex.lastRequest()!.path).toContain(stream ? ":streamRawPredict" : ":rawPredict")
    })

    it.each(CASES)("%i %s (%s) reaches an OpenAI caller as %i, x-gw-error-code %s", async (status, name, message, callerStatus, code) => {
      fakes.vertex.script(googleError(status, name, message))
      const error = await openai().chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], stream })
        .then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>)
      expect(error).toBeInstanceOf(OpenAI.APIError)
      expect({ status: error!.status, code: error!.headers?.get("x-gw-error-code") }).toEqual({ status: callerStatus, code })
    })
  })
})
