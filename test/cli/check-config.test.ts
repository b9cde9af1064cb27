/**
 * The CLI as an operator uses it: `gateway check-config [PATH]` and
 * `gateway serve` with a valid and an invalid configuration, run as real
 * processes (`node src/main.ts`) from the project root.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { ExpectStatic } from "vitest"
import { runCli, startCli } from "./process.ts"

/** Each test starts Node processes; on a busy machine that alone can take seconds. */
const PROCESS_TIMEOUT_MS = 60_000

const OPENAI_KEY = "sk-cli-test-openai-DO-NOT-PRINT"
const TARGET_KEY = "sk-cli-test-target-DO-NOT-PRINT"
const BEARER = "otlp-bearer-DO-NOT-PRINT"
const REDIS_PASSWORD = "redis-pw-DO-NOT-PRINT"
const SECRETS = [OPENAI_KEY, TARGET_KEY, BEARER, REDIS_PASSWORD]

const VALID = `
[server]
port = 4000

[providers.openai]
models = ["gpt-4o"]

[providers.anthropic]
models = ["claude-sonnet-4-5"]

[targets.primary]
model = "gpt-4o"
credential = "env::PRIMARY_KEY"

[routes.smart]
endpoint = "chat"
models = ["smart"]
strategy = "fallback"
targets = ["primary"]
`

const INVALID = `
[server]

[providers.openai]
models = ["gpt-4o"]

[routes.smart]
endpoint = "chat"
models = ["smart"]
strategy = "fallback"
targets = ["nope"]
`

/** Keys and tokens in the environment: they must never reach stdout or stderr. */
const SECRET_ENV = {
  OPENAI_API_KEY: OPENAI_KEY,
  PRIMARY_KEY: TARGET_KEY,
  GATEWAY_GENAI_OTLP_BEARER_TOKEN: BEARER,
  GATEWAY_TENANT_ROUTING_REDIS_URL: `redis://default:${REDIS_PASSWORD}@redis.internal:6379`
}

let dir: string
const write = (name: string, text: string): string => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "gateway-cli-test-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const expectNoSecrets = (expect: ExpectStatic, ...texts: ReadonlyArray<string>) => {
  for (const text of texts) for (const secret of SECRETS) expect(text).not.toContain(secret)
}

// Each test is its own process and file: they run side by side.
describe.concurrent("gateway check-config", { timeout: PROCESS_TIMEOUT_MS }, () => {
  it("a valid file exits 0 and prints the resolved configuration with defaults and credentials redacted", async ({ expect }) => {
    const path = write("valid.toml", VALID)
    const { code, stdout, stderr } = await runCli(["check-config", path], SECRET_ENV)
    expect(stderr).toBe("")
    expect(code).toBe(0)
    const [header, ...rest] = stdout.split("\n")
    expect(header).toBe(`# ${path}: valid`)
    const view = JSON.parse(rest.join("\n"))
    expect(view.server).toEqual({ host: "127.0.0.1", port: 4000, max_body_bytes: 33554432, max_upload_bytes: 536870912, shutdown_grace_secs: 30, body_idle_timeout_secs: 30, body_min_bytes_per_sec: 1024, max_connections: 10000, header_timeout_secs: 60, client_idle_timeout_secs: 600, workers: 1, watch_config: false })
    expect(view.routing.retry).toEqual({ max_retries: 2, backoff_base_ms: 500 })
    expect(view.telemetry.sample_ratio).toBe(0.1)
    expect(view.cache.ttl_seconds).toBe(604800)
    expect(view.providers.openai.credential).toBe("env::OPENAI_API_KEY (convention) [set, redacted]")
    expect(view.providers.anthropic.credential).toBe("env::ANTHROPIC_API_KEY (convention) [unset]")
    expect(view.targets.primary).toEqual({ model: "openai::gpt-4o", credential: "env::PRIMARY_KEY [set, redacted]", weight: 1 })
    expect(view.genai_telemetry.otlp_bearer_token).toBe("[redacted]")
    expect(view.tenant_routing.redis_url).toBe("redis://default:redacted@redis.internal:6379")
    expectNoSecrets(expect, stdout, stderr)
  })

  it("environment overrides show in the printed configuration", async ({ expect }) => {
    const path = write("env.toml", "[server]\n")
    const { code, stdout } = await runCli(["check-config", path], { SERVICE_NAME: "billing", OTEL_TRACES_SAMPLER_RATIO: "0.5" })
    expect(code).toBe(0)
    const view = JSON.parse(stdout.slice(stdout.indexOf("\n") + 1))
    expect(view.telemetry).toMatchObject({ service_name: "billing", sample_ratio: 0.5 })
  })

  it("warnings go to stderr, one line each, and the file is still valid", async ({ expect }) => {
    const path = write("warn.toml", "[server]\nprot = 4001\n\n[routing.circuit_breaker]\nenabled = true\n")
    const { code, stdout, stderr } = await runCli(["check-config", path], {})
    expect(code).toBe(0)
    expect(stdout.startsWith(`# ${path}: valid\n`)).toBe(true)
    expect(stderr).toBe(
      `warning: server.prot: unknown key; did you mean "port"?\n` +
        `warning: routing.circuit_breaker: deprecated and ignored; failover is sequential and stateless (strategy = "fallback")\n`
    )
  })

  it("an invalid file exits non-zero with one message on stderr naming the file and the key path", async ({ expect }) => {
    const path = write("invalid.toml", INVALID)
    const { code, stdout, stderr } = await runCli(["check-config", path], SECRET_ENV)
    expect(code).toBe(1)
    expect(stdout).toBe("")
    expect(stderr).toBe(`invalid configuration in ${path}: routes.smart.targets[0]: unknown target "nope"\n`)
  })

  it("a literal key in the file is rejected without being printed", async ({ expect }) => {
    const path = write("literal.toml", `[server]\n\n[providers.openai]\nmodels = []\ncredential = "${OPENAI_KEY}"\n`)
    const { code, stdout, stderr } = await runCli(["check-config", path], {})
    expect(code).toBe(1)
    expect(stderr).toBe(
      `invalid configuration in ${path}: providers.openai.credential: expected "env::<VARIABLE>" or "none", got "<redacted literal>" (keys never belong in the file)\n`
    )
    expectNoSecrets(expect, stdout, stderr)
  })

  it("a bad environment override fails naming the variable", async ({ expect }) => {
    const path = write("override.toml", "[server]\n")
    const { code, stderr } = await runCli(["check-config", path], { GATEWAY_TENANT_ROUTING_LRU_CAPACITY: "lots" })
    expect(code).toBe(1)
    expect(stderr).toBe(
      `invalid configuration in ${path}: GATEWAY_TENANT_ROUTING_LRU_CAPACITY (overrides tenant_routing.lru_capacity): expected an integer, got "lots"\n`
    )
  })

  it("invalid TOML fails with the line and column", async ({ expect }) => {
    const path = write("broken.toml", "[server\nport = 1\n")
    const { code, stderr } = await runCli(["check-config", path], {})
    expect(code).toBe(1)
    expect(stderr).toMatch(new RegExp(`^invalid TOML in ${path}: line 1, column \\d+: .+\\n$`))
  })

  it("a missing file fails naming the path", async ({ expect }) => {
    const path = join(dir, "missing.toml")
    const { code, stderr } = await runCli(["check-config", path], {})
    expect(code).toBe(1)
    expect(stderr).toBe(`cannot read configuration ${path}: file not found\n`)
  })

  it("without a path it checks the file GATEWAY_CONFIG names", async ({ expect }) => {
    const path = write("from-env.toml", "[server]\nport = 4555\n")
    const { code, stdout } = await runCli(["check-config"], { GATEWAY_CONFIG: path })
    expect(code).toBe(0)
    expect(stdout.startsWith(`# ${path}: valid\n`)).toBe(true)
    expect(JSON.parse(stdout.slice(stdout.indexOf("\n") + 1)).server.port).toBe(4555)
  })

  it("without a path or GATEWAY_CONFIG it checks the shipped config/gateway.toml", async ({ expect }) => {
    const { code, stdout, stderr } = await runCli(["check-config"], {})
    expect(stderr).toBe("")
    expect(code).toBe(0)
    expect(stdout.startsWith("# config/gateway.toml: valid\n")).toBe(true)
  })
})

describe("gateway serve", { timeout: PROCESS_TIMEOUT_MS }, () => {
  const running: Array<ReturnType<typeof startCli>> = []
  afterEach(() => {
    for (const process of running.splice(0)) if (process.child.exitCode === null) process.child.kill("SIGKILL")
  })

  it("an invalid configuration exits non-zero with the message and never listens", async () => {
    const path = write("serve-invalid.toml", INVALID)
    const { code, stdout, stderr } = await runCli(["serve", "--config", path], SECRET_ENV)
    expect(code).toBe(1)
    expect(stderr).toBe(`invalid configuration in ${path}: routes.smart.targets[0]: unknown target "nope"\n`)
    expect(stdout).not.toContain("listening")
  })

  it("a misspelt [provider.openai] table refuses to start instead of serving nothing", async () => {
    const path = write("serve-misspelt.toml", `[server]\nport = 0\n\n[provider.openai]\nmodels = ["gpt-4o"]\n`)
    const { code, stdout, stderr } = await runCli(["serve", "--config", path], SECRET_ENV)
    expect(code).toBe(1)
    expect(stderr).toBe(`invalid configuration in ${path}: provider: unknown top-level table; did you mean "providers"?\n`)
    expect(stdout).not.toContain("listening")
  })

  it("a valid configuration listens, answers GET /healthz, and exits 0 after shutting down on SIGTERM", async () => {
    // Port 0: the OS picks a free port; the `listening` line reports it.
    const path = write("serve-valid.toml", VALID.replace("port = 4000", "port = 0"))
    const gateway = startCli(["serve", "--config", path], SECRET_ENV)
    running.push(gateway)
    const listening = await gateway.logLine("listening")
    expect(listening).toMatchObject({ level: "info", msg: "listening", host: "127.0.0.1" })
    const port = listening.port as number
    expect(port).toBeGreaterThan(0)

    const response = await fetch(`http://127.0.0.1:${port}/healthz`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: "ok" })

    gateway.child.kill("SIGTERM")
    const { code, signal, stdout, stderr } = await gateway.finished
    expect(signal).toBeNull()
    expect(code).toBe(0)
    const messages = stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line).msg)
    expect(messages).toContain("shutting down")
    expect(messages.indexOf("shutting down")).toBeGreaterThan(messages.indexOf("listening"))
    expect(stderr).toBe("")
    expectNoSecrets(expect, stdout, stderr)
  })

  it("serve reads the file GATEWAY_CONFIG names and logs its warnings", async () => {
    const path = write("serve-env.toml", "[server]\nport = 0\nprot = 1\n")
    const gateway = startCli(["serve"], { GATEWAY_CONFIG: path })
    running.push(gateway)
    const warning = await gateway.logLine("config warning")
    expect(warning).toMatchObject({ level: "warn", source: path, warning: `server.prot: unknown key; did you mean "port"?` })
    await gateway.logLine("listening")
    gateway.child.kill("SIGTERM")
    expect((await gateway.finished).code).toBe(0)
  })
})
