/** Credential locations (docs/reference/gateway-spec.md §2.7, docs/reference/DESIGN.md "Providers"): convention variables, env::VAR, none; keys never in the file, never printed. */
import { Redacted } from "effect"
import { inspect } from "node:util"
import { describe, expect, it } from "vitest"
import { describeCredential, parseCredentialLocation } from "../../src/config/index.ts"
import type { ResolvedProvider } from "../../src/config/index.ts"
import { failure, INVALID, load, withOpenAi, withServer } from "./support.ts"

const SECRET = "sk-test-5ecr3t-never-printed"

const provider = (id: string, table: Record<string, unknown>, env: Record<string, string> = {}): ResolvedProvider => {
  const resolved = load(withServer({ providers: { [id]: { models: ["m"], ...table } } }), env).providers.get(id)
  if (resolved === undefined) throw new Error(`provider ${id} not resolved`)
  return resolved
}

const secretOf = (resolved: ResolvedProvider): string | undefined =>
  resolved.credential.value === undefined ? undefined : Redacted.value(resolved.credential.value)

describe("convention variables when credential is omitted", () => {
  const KINDS: ReadonlyArray<readonly [kind: string, variable: string, table: Record<string, unknown>]> = [
    ["openai", "OPENAI_API_KEY", {}],
    ["anthropic", "ANTHROPIC_API_KEY", {}],
    ["azure", "AZURE_OPENAI_API_KEY", { base_url: "https://example.openai.azure.com" }],
    ["cohere", "COHERE_API_KEY", {}],
    ["gemini", "GEMINI_API_KEY", {}],
    ["bedrock", "AWS_BEARER_TOKEN_BEDROCK", { base_url: "https://bedrock-runtime.us-east-1.amazonaws.com" }],
    ["vertex", "GOOGLE_ACCESS_TOKEN", { project: "my-project", location: "us-central1" }]
  ]

  it.each(KINDS)("[providers.%s] reads %s", (kind, variable, table) => {
    const resolved = provider(kind, table, { [variable]: SECRET })
    expect(resolved.credential.location).toEqual({ kind: "env", variable, convention: true })
    expect(secretOf(resolved)).toBe(SECRET)
    expect(describeCredential(resolved.credential)).toBe(`env::${variable} (convention) [set, redacted]`)
  })

  it.each(KINDS)("[providers.%s] without %s loads without a warning (callers may bring their own key)", (kind, variable, table) => {
    const settings = load(withServer({ providers: { [kind]: { models: ["m"], ...table } } }), {})
    expect(settings.warnings).toEqual([])
    const resolved = settings.providers.get(kind)!
    expect(resolved.credential.value).toBeUndefined()
    expect(describeCredential(resolved.credential)).toBe(`env::${variable} (convention) [unset]`)
  })

  it.each([
    ["my-groq", "MY_GROQ_API_KEY"],
    ["groq", "GROQ_API_KEY"],
    ["vllm.local", "VLLM_LOCAL_API_KEY"],
    ["Ollama2", "OLLAMA2_API_KEY"]
  ])("another provider id %s reads %s", (id, variable) => {
    const resolved = provider(id, { kind: "openai", base_url: "http://127.0.0.1:8000/v1" }, { [variable]: SECRET })
    expect(resolved.credential.location).toEqual({ kind: "env", variable, convention: true })
    expect(secretOf(resolved)).toBe(SECRET)
  })

  it("the convention follows the provider id, not its kind: [providers.claude-eu] with kind anthropic reads CLAUDE_EU_API_KEY", () => {
    const resolved = provider("claude-eu", { kind: "anthropic", base_url: "https://eu.anthropic.test" }, { ANTHROPIC_API_KEY: "other", CLAUDE_EU_API_KEY: SECRET })
    expect(secretOf(resolved)).toBe(SECRET)
  })

  it("an empty variable counts as unset", () => {
    expect(provider("openai", {}, { OPENAI_API_KEY: "" }).credential.value).toBeUndefined()
  })
})

describe("explicit credential locations", () => {
  it("env::VAR reads that variable instead of the convention", () => {
    const resolved = provider("openai", { credential: "env::TEAM_OPENAI_KEY" }, { TEAM_OPENAI_KEY: SECRET, OPENAI_API_KEY: "other" })
    expect(resolved.credential.location).toEqual({ kind: "env", variable: "TEAM_OPENAI_KEY", convention: false })
    expect(secretOf(resolved)).toBe(SECRET)
    expect(describeCredential(resolved.credential)).toBe("env::TEAM_OPENAI_KEY [set, redacted]")
  })

  it("none disables credential resolution", () => {
    const resolved = provider("openai", { credential: "none" }, { OPENAI_API_KEY: SECRET })
    expect(resolved.credential).toEqual({ location: { kind: "none" }, value: undefined })
    expect(describeCredential(resolved.credential)).toBe("none")
  })

  it("a provider's env:: variable that is not set is only a warning", () => {
    const settings = load(withServer({ providers: { openai: { models: ["m"], credential: "env::TEAM_OPENAI_KEY" } } }), {})
    expect(settings.warnings).toEqual(["providers.openai.credential: TEAM_OPENAI_KEY is not set; requests need the caller's own key"])
    expect(describeCredential(settings.providers.get("openai")!.credential)).toBe("env::TEAM_OPENAI_KEY [unset]")
  })

  it("a target's env:: variable that is not set stops the start", () => {
    expect(failure(withOpenAi(["m"], { targets: { t: { model: "m", credential: "env::TARGET_KEY" } } }))).toBe(
      `${INVALID}targets.t.credential: environment variable TARGET_KEY is not set`
    )
  })

  it("a target's env:: variable that is set overrides the provider credential for that target", () => {
    const settings = load(withOpenAi(["m"], { targets: { t: { model: "m", credential: "env::TARGET_KEY" } } }), {
      TARGET_KEY: SECRET,
      OPENAI_API_KEY: "provider-key"
    })
    const target = settings.targets.get("t")!
    expect(target.credential && Redacted.value(target.credential.value!)).toBe(SECRET)
    expect(secretOf(settings.providers.get("openai")!)).toBe("provider-key")
  })

  it("a target without credential uses its provider's", () => {
    expect(load(withOpenAi(["m"], { targets: { t: { model: "m" } } })).targets.get("t")!.credential).toBeUndefined()
  })

  it("a target may set credential = none", () => {
    expect(load(withOpenAi(["m"], { targets: { t: { model: "m", credential: "none" } } })).targets.get("t")!.credential).toEqual({
      location: { kind: "none" },
      value: undefined
    })
  })
})

describe("keys never belong in the file", () => {
  it("a literal key as a provider credential is rejected without echoing it", () => {
    const message = failure(withServer({ providers: { openai: { models: [], credential: SECRET } } }))
    expect(message).toBe(
      `${INVALID}providers.openai.credential: expected "env::<VARIABLE>" or "none", got "<redacted literal>" (keys never belong in the file)`
    )
    expect(message).not.toContain(SECRET)
  })

  it("a literal key as a target credential is rejected without echoing it", () => {
    const message = failure(withOpenAi(["m"], { targets: { t: { model: "m", credential: SECRET } } }))
    expect(message).toBe(
      `${INVALID}targets.t.credential: expected "env::<VARIABLE>" or "none", got "<redacted literal>" (keys never belong in the file)`
    )
    expect(message).not.toContain(SECRET)
  })

  it("env:: followed by something that is not a variable name is rejected and shown (it is not a key)", () => {
    expect(failure(withServer({ providers: { openai: { models: [], credential: "env::1-BAD" } } }))).toBe(
      `${INVALID}providers.openai.credential: expected "env::<VARIABLE>" or "none", got "env::1-BAD" (keys never belong in the file)`
    )
    expect(parseCredentialLocation("env::")).toBeUndefined()
    expect(parseCredentialLocation("NONE")).toBeUndefined()
  })
})

describe("resolved keys are held as Redacted", () => {
  const resolved = () => provider("openai", {}, { OPENAI_API_KEY: SECRET })

  it("String(value) does not reveal the key", () => {
    const value = resolved().credential.value!
    expect(Redacted.isRedacted(value)).toBe(true)
    expect(String(value)).toBe("<redacted>")
    expect(`${value}`).not.toContain(SECRET)
  })

  it("JSON and util.inspect of the whole resolved provider do not reveal the key", () => {
    const whole = resolved()
    expect(JSON.stringify(whole)).not.toContain(SECRET)
    expect(inspect(whole, { depth: 10 })).not.toContain(SECRET)
  })

  it("the key is only read deliberately with Redacted.value", () => {
    expect(secretOf(resolved())).toBe(SECRET)
  })
})

describe("AWS keys of a SigV4 provider (Bedrock)", () => {
  const BEDROCK = { base_url: "https://bedrock-runtime.us-east-1.amazonaws.com", auth_type: "sigv4" }
  const AWS_SECRET = "aws/secret/never-printed-0001"
  const awsOf = (table: Record<string, unknown>, env: Record<string, string>) => provider("bedrock", { ...BEDROCK, ...table }, env).sigv4!.credentials
  const plain = (credentials: ReturnType<typeof awsOf>) =>
    credentials === undefined ? undefined : {
      accessKeyId: credentials.accessKeyId,
      secret: Redacted.value(credentials.secretAccessKey),
      token: credentials.sessionToken === undefined ? undefined : Redacted.value(credentials.sessionToken)
    }

  it("default to AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN", () => {
    expect(plain(awsOf({}, { AWS_ACCESS_KEY_ID: "AKIADEFAULT", AWS_SECRET_ACCESS_KEY: AWS_SECRET, AWS_SESSION_TOKEN: "tok" })))
      .toEqual({ accessKeyId: "AKIADEFAULT", secret: AWS_SECRET, token: "tok" })
  })

  it("each key may name its own variable (env::VAR), the others keeping their default", () => {
    const env = { AWS_ACCESS_KEY_ID: "AKIADEFAULT", AWS_SECRET_ACCESS_KEY: "default-secret", TEAM_B_KEY_ID: "AKIATEAMB", TEAM_B_SECRET: AWS_SECRET, TEAM_B_TOKEN: "team-b-token" }
    expect(plain(awsOf({ access_key_id: "env::TEAM_B_KEY_ID", secret_access_key: "env::TEAM_B_SECRET", session_token: "env::TEAM_B_TOKEN" }, env)))
      .toEqual({ accessKeyId: "AKIATEAMB", secret: AWS_SECRET, token: "team-b-token" })
    expect(plain(awsOf({ secret_access_key: "env::TEAM_B_SECRET" }, env))).toEqual({ accessKeyId: "AKIADEFAULT", secret: AWS_SECRET, token: undefined })
    // check-config says where each key comes from, never what it is.
    expect(provider("bedrock", { ...BEDROCK, secret_access_key: "env::TEAM_B_SECRET" }, env).sigv4!.described).toEqual({
      access_key_id: "env::AWS_ACCESS_KEY_ID (default) [set, redacted]",
      secret_access_key: "env::TEAM_B_SECRET [set, redacted]",
      session_token: "env::AWS_SESSION_TOKEN (default) [unset]"
    })
  })

  it("a named variable that is unset stops the start; unset defaults only warn (calls are refused)", () => {
    const doc = (table: Record<string, unknown>) => withServer({ providers: { bedrock: { models: ["m"], ...BEDROCK, ...table } } })
    expect(failure(doc({ session_token: "env::MISSING_TOKEN" }), { AWS_ACCESS_KEY_ID: "AKIA", AWS_SECRET_ACCESS_KEY: AWS_SECRET }))
      .toContain("providers.bedrock.session_token: environment variable MISSING_TOKEN is not set")
    const settings = load(doc({}), {})
    expect(settings.providers.get("bedrock")!.sigv4!.credentials).toBeUndefined()
    expect(settings.warnings.join("\n")).toContain("providers.bedrock.access_key_id: env::AWS_ACCESS_KEY_ID is not set")
  })

  it("a key written in the file is refused without being repeated; the keys are for sigv4 only", () => {
    const message = failure(withServer({ providers: { bedrock: { models: ["m"], ...BEDROCK, secret_access_key: AWS_SECRET } } }), { AWS_ACCESS_KEY_ID: "AKIA" })
    expect(message).toContain(`providers.bedrock.secret_access_key: expected "env::<VARIABLE>"`)
    expect(message).not.toContain(AWS_SECRET)
    expect(failure(withServer({ providers: { bedrock: { models: ["m"], base_url: BEDROCK.base_url, access_key_id: "env::X" } } }), { X: "AKIA" }))
      .toContain(`providers.bedrock.access_key_id: AWS keys are for auth_type = "sigv4" only`)
  })
})
