import { Redacted, Result } from "effect"
import { readFileSync } from "node:fs"
import { parse } from "smol-toml"
import { describe, expect, it } from "vitest"
import { settingsFromDocument, snapshotFromDocument } from "../../src/config/index.ts"
import { compileProvider } from "../../src/providers/adapter.ts"
import { compileRoutingTable } from "../../src/routing/table.ts"

const doc = readFileSync(new URL("../../docs/multi-tenant.md", import.meta.url), "utf8")
const jsonBlocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((match) => JSON.parse(match[1]) as Record<string, unknown>)
const tomlBlocks = [...doc.matchAll(/```toml\n([\s\S]*?)```/g)].map((match) => match[1])

describe("docs/multi-tenant.md", () => {
  const example = jsonBlocks.find((block) => "version" in block && "providers" in block)

  it("the snapshot example is a valid snapshot without warnings", () => {
    const result = snapshotFromDocument(example, "docs/multi-tenant.md")
    if (Result.isFailure(result)) throw result.failure
    expect(result.success.settings.warnings).toEqual([])
    expect(result.success.version).toBe("2024-06-01.3")
    expect([...result.success.disabledEndpoints]).toEqual(["image_generation", "audio_speech"])
  })

  it("its credentials are what the credential table says", () => {
    const result = snapshotFromDocument(example, "docs/multi-tenant.md")
    if (Result.isFailure(result)) throw result.failure
    const { providers, targets } = result.success.settings
    expect(Redacted.value(providers.get("openai")!.credential.value!)).toBe("sk-proj-example-openai-key")
    expect(providers.get("groq")!.credential).toEqual({ location: { kind: "none" }, value: undefined })
    expect(targets.get("primary")!.credential).toBeUndefined()
    expect(Redacted.value(targets.get("backup")!.credential!.value!)).toBe("sk-ant-example-backup-key")
  })

  it("compiles into the same routing table a TOML file gives", () => {
    const result = snapshotFromDocument(example, "docs/multi-tenant.md")
    if (Result.isFailure(result)) throw result.failure
    const plan = Result.getOrThrow(compileRoutingTable(result.success.settings, compileProvider).resolve("assistant", undefined, "chat"))
    expect(plan.steps.map((step) => [step.strategy, step.targets.map((target) => target.id)])).toEqual([["fallback", ["primary", "backup"]]])
  })

  it("the [tenant_routing] example is a valid configuration without warnings", () => {
    expect(tomlBlocks).toHaveLength(1)
    const result = settingsFromDocument(parse(tomlBlocks[0]), {}, "docs/multi-tenant.md")
    if (Result.isFailure(result)) throw result.failure
    expect(result.success.warnings).toEqual([])
    expect(result.success.file.tenant_routing.enabled).toBe(true)
  })

  it("the mint-read-token answer shown has the fields the gateway reads", () => {
    const mint = jsonBlocks.find((block) => "token" in block)
    expect(Object.keys(mint ?? {})).toEqual(["token", "expires_in"])
  })
})
