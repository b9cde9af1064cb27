/**
 * Request selection in multi-tenant mode: the project from x-gw-project-id
 * (else [auth] project_id), the environment from x-gw-environment (else
 * production), and ids that cannot shape an odd Redis key.
 */
import { describe, expect, it } from "vitest"
import { renderGatewayError } from "../../src/domain/index.ts"
import { environmentsKey, tenantFromRequest, tenantId } from "../../src/tenancy/index.ts"

const select = (project: string | Array<string> | undefined, environment?: string | Array<string>, configured?: string) => {
  const result = tenantFromRequest(project, environment, configured)
  return result._tag === "Success"
    ? { key: result.success.key, projectId: result.success.projectId, envSlug: result.success.envSlug }
    : { status: result.failure.status, code: result.failure.code, message: result.failure.message }
}

describe("tenant selection", () => {
  it("uses the project header and the environment header, defaulting to production", () => {
    expect(select("acme")).toEqual({ key: "gw:routing:acme:production", projectId: "acme", envSlug: "production" })
    expect(select("acme", "staging")).toEqual({ key: "gw:routing:acme:staging", projectId: "acme", envSlug: "staging" })
    expect(select(["acme", "other"], ["dev"])).toEqual({ key: "gw:routing:acme:dev", projectId: "acme", envSlug: "dev" })
    expect(environmentsKey("acme")).toBe("gw:routing:acme:envs")
  })

  it("falls back to [auth] project_id when the header is absent or empty, never over a sent header", () => {
    expect(select(undefined, undefined, "from-config")).toMatchObject({ projectId: "from-config" })
    expect(select("", undefined, "from-config")).toMatchObject({ projectId: "from-config" })
    expect(select("from-header", undefined, "from-config")).toMatchObject({ projectId: "from-header" })
  })

  it("a request without any project is a 400 invalid_request that says what to send", () => {
    expect(select(undefined)).toEqual({
      status: 400,
      code: "invalid_request",
      message: "a project is required: send the x-gw-project-id header (multi-tenant mode has no default project unless [auth] project_id is set)"
    })
    const rendered = tenantFromRequest(undefined, undefined, undefined)
    if (rendered._tag !== "Failure") throw new Error("expected a failure")
    expect(JSON.parse(renderGatewayError(rendered.failure, "openai").body as string).error.code).toBe("invalid_request")
  })

  it.each([
    ["a:b", "a colon would read as another key's shape"],
    ["{tag}", "braces are a Redis Cluster hash tag"],
    ["with space", "whitespace"],
    ["line\nbreak", "control characters"],
    ["-leading", "must start with a letter or digit"],
    ["x".repeat(129), "longer than 128"],
    ["é", "non-ASCII"]
  ])("refuses project id %j (%s)", (project) => {
    expect(select(project)).toMatchObject({ status: 400, code: "invalid_request" })
  })

  it("refuses odd environment slugs and accepts ordinary ids", () => {
    expect(select("acme", "prod:x")).toMatchObject({
      status: 400,
      message: `x-gw-environment must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`
    })
    expect(select("acme", "e".repeat(65))).toMatchObject({ status: 400 })
    expect(tenantId("3f2b1c9e-7a44-4f0e-9c3d-2b8e5f6a7c10", "eu-west.v2")._tag).toBe("Success")
  })
})
