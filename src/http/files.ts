/**
 * The Files API (docs/reference/gateway-spec.md §4, 4.3.8): upload, list, retrieve, content, delete,
 * proxied to one completions-style provider.
 *
 * Provider choice (docs/reference/DESIGN.md "Files"): `x-genai-provider` when present (a
 * configured provider whose kind has the `files` capability, else 400), else
 * the single configured provider with that capability, else 400 asking for
 * the header. No security scanning.
 *
 * Uploads and downloads stream through both ways: the caller's multipart
 * bytes go upstream as they arrive (routing does not depend on the body, so
 * they are forwarded verbatim) and the upstream's answer is piped back. One
 * attempt, no retries: a consumed upload cannot be replayed.
 */
import { Effect, Result } from "effect"
import type { Scope } from "effect"
import type { GatewaySettings } from "../config/index.ts"
import { clip, GatewayError, PROVIDER_KIND_INFO } from "../domain/index.ts"
import type { AnyGatewayFailure } from "../domain/index.ts"
import { attemptScoped, header } from "../pipeline/index.ts"
import type { Answer } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"
import { isMultipartForm, uploadTooLarge } from "./multipart.ts"
import { callProvider } from "./provider-call.ts"
import type { CompiledProvider } from "../providers/adapter.ts"
import type { ProviderClient } from "../providers/transport.ts"
import { limitedBody } from "./limited-body.ts"
import type { ProjectResolver } from "./project.ts"
import type { RouteDef } from "./router.ts"

export interface FilesDependencies {
  readonly project: ProjectResolver
  /** The gateway's own `[server]` limits. */
  readonly server: GatewaySettings["file"]["server"]
  readonly client: ProviderClient["Service"]
}

const invalid = (message: string) => new GatewayError({ status: 400, code: "invalid_request", message })

const hasFiles = (provider: CompiledProvider): boolean => PROVIDER_KIND_INFO[provider.kind].capabilities.has("files")

/** The provider a files request goes to, or the 400 that explains why there is none. */
export const chooseFilesProvider = (
  providers: ReadonlyMap<string, CompiledProvider>,
  requested: string | undefined
): Result.Result<CompiledProvider, GatewayError> => {
  if (requested !== undefined) {
    const provider = providers.get(requested.trim())
    if (provider === undefined) return Result.fail(invalid(`x-genai-provider names provider "${clip(requested)}", which is not configured`))
    if (hasFiles(provider)) return Result.succeed(provider)
    return Result.fail(
      new GatewayError({
        status: 400,
        code: "unsupported_for_model",
        message: `files are not supported by ${provider.family === "anthropic" ? "messages-style " : ""}provider "${provider.id}" (kind ${provider.kind})`
      })
    )
  }
  const capable = [...providers.values()].filter(hasFiles)
  if (capable.length === 1) return Result.succeed(capable[0])
  if (capable.length === 0) return Result.fail(invalid("no configured provider supports the files API (it needs an openai- or azure-kind provider)"))
  return Result.fail(invalid(
    `several configured providers support the files API (${capable.map((p) => p.id).join(", ")}); choose one with the x-genai-provider header`
  ))
}

type FileOperation = "upload" | "list" | "retrieve" | "content" | "delete"

/** Routes for the five file operations. */
export const fileRoutes = ({ project: projectOf, server, client }: FilesDependencies): ReadonlyArray<RouteDef<never>> => {
  const run = (operation: FileOperation) => (ctx: HttpRequestContext): Effect.Effect<Answer, AnyGatewayFailure, Scope.Scope> =>
    Effect.gen(function*() {
      const { table, settings } = yield* projectOf(ctx)
      const chosen = chooseFilesProvider(table.providers, header(ctx, "x-genai-provider"))
      if (Result.isFailure(chosen)) return yield* chosen.failure
      const provider = chosen.success
      const upload = operation === "upload"
      if (upload && !isMultipartForm(header(ctx, "content-type"))) {
        return yield* invalid("POST /v1/files takes a multipart/form-data body with `purpose` and `file`")
      }
      const fileId = ctx.params.file_id
      const suffix = fileId === undefined ? "" : `/${encodeURIComponent(fileId)}${operation === "content" ? "/content" : ""}`
      const length = header(ctx, "content-length")
      const maxUpload = server.max_upload_bytes
      if (upload && Number(length) > maxUpload) return yield* uploadTooLarge(maxUpload)
      // A chunked upload is counted as it streams: past the limit it stops, with a 413.
      const body = upload ? limitedBody(ctx.req, maxUpload) : undefined
      return yield* callProvider(ctx, {
        client,
        settings,
        provider,
        operation: "files",
        suffix,
        body: body === undefined ? undefined : { stream: body.stream, length },
        onSendFailure: (error) => (body?.exceeded() === true ? uploadTooLarge(maxUpload) : error)
      })
    }).pipe(attemptScoped)
  return [
    { method: "POST", path: "/v1/files", handler: run("upload") },
    { method: "GET", path: "/v1/files", handler: run("list") },
    { method: "GET", path: "/v1/files/{file_id}", handler: run("retrieve") },
    { method: "DELETE", path: "/v1/files/{file_id}", handler: run("delete") },
    { method: "GET", path: "/v1/files/{file_id}/content", handler: run("content") }
  ]
}
