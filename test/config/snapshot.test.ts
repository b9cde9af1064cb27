/**
 * Tenant snapshots validated with the rules of the configuration file: same
 * schema messages and cross-checks, the gateway's own sections refused,
 * credentials carried inline and never looked up in the host environment.
 */
import { Redacted, Result } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { describeCredential, redactedView, snapshotFromDocument } from "../../src/config/index.ts"
import type { ValidatedSnapshot } from "../../src/config/index.ts"
import { GatewayConfig } from "../../src/config/index.ts"
import { failure as fileFailure } from "./support.ts"

const SECRET = "sk-snapshot-SECRET-4242"
const SOURCE = "snapshot.json"

const valid = (document: Record<string, unknown>): ValidatedSnapshot => {
  const result = snapshotFromDocument(document, SOURCE)
  if (Result.isFailure(result)) throw new Error(result.failure.error.message)
  return result.success
}

const failure = (document: unknown) => {
  const result = snapshotFromDocument(document, SOURCE)
  if (Result.isSuccess(result)) throw new Error("expected an invalid snapshot")
  return result.failure
}

const provider = { models: ["gpt-4o"] }

describe("snapshot validation", () => {
  const saved = process.env.OPENAI_API_KEY
  afterEach(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY
    else process.env.OPENAI_API_KEY = saved
  })

  it("reads version (text or integer), disabled_endpoints and the routing sections", () => {
    const snapshot = valid({
      version: 42,
      disabled_endpoints: ["image_generation", "audio_speech"],
      providers: { openai: provider },
      routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["t"] } },
      targets: { t: { model: "gpt-4o" } }
    })
    expect(snapshot.version).toBe("42")
    expect([...snapshot.disabledEndpoints]).toEqual(["image_generation", "audio_speech"])
    expect([...snapshot.settings.targets.keys()]).toEqual(["t"])
    expect(valid({ version: "2024-06-01.3" }).version).toBe("2024-06-01.3")
  })

  it("refuses a missing or empty version and unknown endpoint types", () => {
    expect(failure({ providers: { openai: provider } }).error.message).toBe(`invalid configuration in ${SOURCE}: version: is required`)
    expect(failure({ version: "" }).problems).toEqual(["version"])
    expect(failure({ version: 1, disabled_endpoints: ["rerank"] }).problems).toEqual(["disabled_endpoints[0]"])
  })

  it("gives the same messages as the configuration file for the same sections", () => {
    const sections = {
      providers: { openai: provider },
      routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "single", targets: ["missing"] } },
      functions: { f: { endpoint: "chat", strategy: "experiment", variants: { a: { model: "gpt-4o", weight: 0 } } } }
    }
    const fromSnapshot = failure({ version: 1, ...sections }).error.message.replace(SOURCE, "SOURCE")
    const fromFile = fileFailure({ server: {}, ...sections }).replace("test-gateway.toml", "SOURCE")
    expect(fromSnapshot).toBe(fromFile)
    expect(fromSnapshot).toContain(`routes.smart.targets[0]: unknown target "missing"`)
  })

  it("warns about unknown keys like the file does", () => {
    expect(valid({ version: 1, providers: { openai: { ...provider, timout_ms: 5 } } }).settings.warnings).toEqual([
      `providers.openai.timout_ms: unknown key; did you mean "timeout_ms"?`
    ])
  })

  it("reports a bad strategy and a missing target in one pass, like the file does", () => {
    const result = failure({
      version: 1,
      providers: { openai: provider },
      routes: { smart: { endpoint: "chat", models: ["smart"], strategy: "round_robin", targets: ["missing"] } }
    })
    expect(result.problems).toEqual(["routes.smart.strategy", "routes.smart.targets[0]"])
  })

  it("refuses a misspelt top-level table like the file does", () => {
    const result = failure({ version: 1, provider: { openai: provider } })
    expect(result.error.message).toBe(`invalid configuration in ${SOURCE}: provider: unknown top-level table; did you mean "providers"?`)
    expect(result.problems).toEqual(["provider"])
  })

  it("refuses the gateway's own sections, each by name", () => {
    const result = failure({ version: 1, server: {}, telemetry: {}, genai_telemetry: {}, auth: {}, tenant_routing: {} })
    expect(result.problems).toEqual(["server", "telemetry", "genai_telemetry", "auth", "tenant_routing"])
    expect(result.error.message).toContain("  - tenant_routing: not allowed in a snapshot; [tenant_routing] belongs to the gateway's own configuration file")
  })

  it("takes the gateway's own sections from the gateway's file", () => {
    const gateway = GatewayConfig.fromDocument({ server: { port: 4321 }, telemetry: { service_name: "edge" } }).file
    const result = snapshotFromDocument({ version: 1 }, SOURCE, gateway)
    expect(Result.isSuccess(result) && [result.success.settings.file.server.port, result.success.settings.file.telemetry.service_name]).toEqual([4321, "edge"])
  })

  it("carries inline credentials as Redacted values that never print", () => {
    const snapshot = valid({
      version: 1,
      providers: { openai: { ...provider, credential: { value: SECRET } } },
      targets: { own: { model: "gpt-4o", credential: { value: `${SECRET}-target` } }, inherit: { model: "gpt-4o" }, none: { model: "gpt-4o", credential: "none" } }
    })
    const credential = snapshot.settings.providers.get("openai")!.credential
    expect(Redacted.value(credential.value!)).toBe(SECRET)
    expect(describeCredential(credential)).toBe("inline [set, redacted]")
    expect(Redacted.value(snapshot.settings.targets.get("own")!.credential!.value!)).toBe(`${SECRET}-target`)
    expect(snapshot.settings.targets.get("inherit")!.credential).toBeUndefined()
    expect(snapshot.settings.targets.get("none")!.credential).toEqual({ location: { kind: "none" }, value: undefined })
    const printed = JSON.stringify(redactedView(snapshot.settings)) + String(credential.value) + JSON.stringify(snapshot.settings.file)
    expect(printed).not.toContain(SECRET)
  })

  it("never reads the host environment: no convention variable, and env:: locations are refused", () => {
    process.env.OPENAI_API_KEY = "host-key-must-not-leak"
    const snapshot = valid({ version: 1, providers: { openai: provider } })
    expect(snapshot.settings.providers.get("openai")!.credential).toEqual({ location: { kind: "none" }, value: undefined })
    const refused = failure({ version: 1, providers: { openai: { ...provider, credential: "env::OPENAI_API_KEY" } }, targets: { t: { model: "gpt-4o", credential: "env::HOME" } } })
    expect(refused.problems).toEqual(["providers.openai.credential", "targets.t.credential"])
    expect(refused.error.message).toContain("a tenant cannot read the gateway host's environment")
  })

  it("refuses other credential shapes without repeating their value", () => {
    const refused = failure({
      version: 1,
      providers: { openai: { ...provider, credential: SECRET } },
      targets: { a: { model: "gpt-4o", credential: { value: "" } }, b: { model: "gpt-4o", credential: { value: SECRET, extra: 1 } } }
    })
    expect(refused.error.message).toBe(
      `invalid configuration in ${SOURCE}:\n` +
        `  - providers.openai.credential: expected {"value": "<key>"} with a non-empty key, or "none"; got a string (not shown)\n` +
        `  - targets.a.credential: expected {"value": "<key>"} with a non-empty key, or "none"; got another object (not shown)\n` +
        `  - targets.b.credential: expected {"value": "<key>"} with a non-empty key, or "none"; got another object (not shown)`
    )
  })

  it("a document that is not an object is refused", () => {
    expect(failure([1, 2]).error.message).toBe(`invalid configuration in ${SOURCE}: expected a JSON object at the top level`)
  })
})

describe("a SigV4 (Bedrock) provider in a snapshot", () => {
  const BEDROCK = { kind: "bedrock", region: "us-east-1", auth_type: "sigv4", models: ["anthropic.claude-v2"] }
  const AWS_SECRET = "aws/snapshot/secret-never-printed"

  it("signs with the AWS keys the snapshot carries, each {\"value\": …}, never the host's environment", () => {
    process.env.AWS_ACCESS_KEY_ID = "AKIAHOSTENVIRONMENT"
    try {
      const snapshot = valid({
        version: 1,
        providers: { bedrock: { ...BEDROCK, access_key_id: { value: "AKIATENANT" }, secret_access_key: { value: AWS_SECRET }, session_token: { value: "tok" } } }
      })
      const aws = snapshot.settings.providers.get("bedrock")!.sigv4!.credentials!
      expect([aws.accessKeyId, Redacted.value(aws.secretAccessKey), Redacted.value(aws.sessionToken!)]).toEqual(["AKIATENANT", AWS_SECRET, "tok"])
      expect(JSON.stringify(redactedView(snapshot.settings))).not.toContain(AWS_SECRET)
      const without = valid({ version: 1, providers: { bedrock: BEDROCK } })
      expect(without.settings.providers.get("bedrock")!.sigv4!.credentials).toBeUndefined()
      expect(without.settings.warnings.join("\n")).toContain("providers.bedrock.access_key_id: the snapshot carries none")
    } finally {
      delete process.env.AWS_ACCESS_KEY_ID
    }
  })

  it("an AWS key as env:: or a bare string is refused, and never repeated", () => {
    const refusal = failure({ version: 1, providers: { bedrock: { ...BEDROCK, access_key_id: "env::AWS_ACCESS_KEY_ID", secret_access_key: AWS_SECRET } } })
    expect(refusal.error.message).toContain("providers.bedrock.access_key_id: env:: locations are refused in a snapshot")
    expect(refusal.error.message).toContain("providers.bedrock.secret_access_key: expected {\"value\": \"<key>\"} with a non-empty key; got a string (not shown)")
    expect(refusal.error.message).not.toContain(AWS_SECRET)
  })
})
