/**
 * Speech-to-text: `POST /v1/audio/transcriptions` (docs/reference/gateway-spec.md §4.3.6), a
 * `multipart/form-data` body with a `file` part and a `model` field. No
 * security scanning.
 *
 * The `model` field routes the request, but the OpenAI SDK sends it after the
 * file, so the form is spooled first (file to a temporary file as it arrives,
 * fields in memory), then the shared proxy program runs with a body rebuilt
 * per attempt: the fields with `model` set to the target's model, then the
 * file streamed from its spooled copy. Retries and failover therefore work as
 * for every model endpoint. The spooled copy is deleted when the request ends.
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import type { Readable } from "node:stream"
import { GatewayError } from "../domain/index.ts"
import type { AnyGatewayFailure } from "../domain/index.ts"
import { header } from "../pipeline/index.ts"
import type { Answer, ProxyBody, ProxyInput } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import { encodedFormLength, encodeForm, freshBoundary, isMultipartForm, spoolForm } from "./multipart.ts"
import type { FormPart, SpooledForm } from "./multipart.ts"
import { sdkFormatOf } from "./chat.ts"
import type { ProjectResolver } from "./project.ts"
import type { RouteDef } from "./router.ts"

const invalid = (message: string, param?: string) =>
  new GatewayError({ status: 400, code: "invalid_request", message, ...(param === undefined ? {} : { param }) })

/** The form's `model` field (the last one when repeated), if it is a non-empty string. */
const modelOf = (form: SpooledForm): string | undefined => {
  let model: string | undefined
  for (const part of form.parts) if (part._tag === "Field" && part.name === "model") model = part.value.trim()
  return model === "" ? undefined : model
}

/**
 * The upstream body: a fresh stream per attempt with this attempt's model.
 * Every stream handed out is destroyed when the request's scope closes, so an
 * attempt abandoned mid-body never keeps a spooled file open.
 */
const formBody = (form: SpooledForm) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => new Set<Readable>()),
      (streams) =>
        Effect.sync(() => {
          for (const stream of streams) stream.destroy()
        })
    ),
    (streams): ProxyBody => {
      const boundary = freshBoundary()
      // The model field becomes the target's; a variant's parameters replace or add fields.
      const partsFor = (model: string, overrides: Readonly<Record<string, unknown>>): Array<FormPart> => {
        const fields: Readonly<Record<string, unknown>> = { ...overrides, model }
        const parts: Array<FormPart> = form.parts
          .filter((part) => !(part._tag === "Field" && part.name !== "model" && part.name in fields))
          .map((part) => (part._tag === "Field" && part.name === "model" ? { ...part, value: model } : part))
        for (const [name, value] of Object.entries(overrides)) {
          if (name !== "model") parts.unshift({ _tag: "Field", name, value: typeof value === "string" ? value : JSON.stringify(value) })
        }
        return parts
      }
      return {
        contentType: `multipart/form-data; boundary=${boundary}`,
        contentLength: (target, overrides) => encodedFormLength(partsFor(target.model, overrides), boundary),
        forTarget: (target, overrides) => {
          const stream = encodeForm(partsFor(target.model, overrides), boundary)
          streams.add(stream)
          return stream
        }
      }
    }
  )

/** Transcriptions and translations share the form rules; both route like transcriptions (docs/reference/gateway-spec.md §2.7 endpoint type). */
const AUDIO_FORMS = [
  { path: "/v1/audio/transcriptions", operation: "audio_transcription" },
  { path: "/v1/audio/translations", operation: "audio_translation" }
] as const

export const transcriptionRoutes = (
  projectOf: ProjectResolver,
  runProxy: (input: ProxyInput) => Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope>,
  maxUploadBytes: number
): ReadonlyArray<RouteDef<never>> =>
  AUDIO_FORMS.map(({ path, operation }) => ({
    method: "POST" as const,
    path,
    handler: (ctx: HttpRequestContext) =>
      Effect.gen(function*() {
        const sdk = yield* sdkFormatOf(ctx, "openai")
        ctx.caller = sdk === "anthropic" ? "anthropic" : "openai"
        const project = yield* projectOf(ctx)
        if (!isMultipartForm(header(ctx, "content-type"))) {
          return yield* invalid(`POST ${path} takes a multipart/form-data body with a \`file\` part and a \`model\` field`)
        }
        const form = yield* spoolForm(ctx.req, maxUploadBytes)
        if (!form.parts.some((part) => part._tag === "File" && part.name === "file")) {
          return yield* invalid("file: required, an audio file part (with a filename) in the multipart form", "file")
        }
        const model = modelOf(form)
        if (model === undefined) return yield* invalid("model: required, a non-empty form field", "model")
        return yield* runProxy({
          ctx,
          project,
          operation,
          endpoint: "audio_transcription",
          capability: "audio_transcription",
          model,
          body: yield* formBody(form),
          family: ctx.caller
        })
      }).pipe(Effect.scoped)
  }))
