/**
 * The cloud providers' cost beside OpenAI's: the gateway's CPU per request
 * (from /proc, user + system) for one OpenAI Chat Completions caller whose
 * model is served by an OpenAI target (the fast path), a Gemini target and a
 * Bedrock target (both translated), JSON and stream, and Bedrock once more with
 * SigV4 signing instead of a bearer API key: the difference of the last two is
 * the signing's cost. One fake upstream (test/fixtures/serve.ts) answers every
 * wire format and checks the SigV4 signatures. Run alone with
 * `node bench/clouds.ts [--quick]` (after `npm run build`); `npm run bench`
 * includes its table.
 *
 * Bounded: every loop has a request count and a deadline.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BEDROCK_TEST_CREDENTIALS } from "../test/fixtures/bedrock.ts"
import { closedLoop, Pools, served, startProcess, stopProcess, withCpu } from "./lib.ts"
import { jsonHeaders, startGateway, twentyWords } from "./performance.ts"

const CONCURRENCY = 32

const TARGETS = [
  { label: "openai (fast path)", model: "gpt-4o" },
  { label: "gemini (translated)", model: "gemini-2.5-flash" },
  { label: "bedrock, bearer API key (translated)", model: "bedrock-bearer-model" },
  { label: "bedrock, SigV4 (translated, signed)", model: "bedrock-sigv4-model" }
] as const

export const runCloudsBench = async (quick: boolean): Promise<Array<Record<string, unknown>>> => {
  const requests = quick ? 1_000 : 5_000
  const warmup = quick ? 300 : 1_500
  const dir = mkdtempSync(join(tmpdir(), "gateway-clouds-"))
  const upstream = await startProcess(["test/fixtures/serve.ts", "--kind", "generic"], "1", dir, "upstream")
  const upstreamUrl = JSON.parse(upstream.line).url as string
  const gateway = await startGateway(dir, "gateway-clouds", upstreamUrl, {
    extra: `
[providers.gemini]
base_url = "${upstreamUrl}"
models = ["gemini-2.5-flash"]
credential = "none"

[providers.bedrock]
base_url = "${upstreamUrl}"
models = ["bedrock-bearer-model"]
credential = "env::BENCH_BEDROCK_KEY"

[providers.bedrock-signed]
kind = "bedrock"
base_url = "${upstreamUrl}"
region = "${BEDROCK_TEST_CREDENTIALS.region}"
auth_type = "sigv4"
models = ["bedrock-sigv4-model"]
`,
    env: {
      BENCH_BEDROCK_KEY: "bench-bedrock-api-key",
      AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
      AWS_SESSION_TOKEN: BEDROCK_TEST_CREDENTIALS.sessionToken
    }
  })
  const pools = new Pools(CONCURRENCY * 2)
  const pool = pools.for(gateway.url)
  const rows: Array<Record<string, unknown>> = []
  try {
    for (const { label, model } of TARGETS) {
      const row: Record<string, unknown> = { target: label }
      for (const stream of [false, true]) {
        const scenario = {
          name: label,
          origin: gateway.url,
          path: "/v1/chat/completions",
          body: JSON.stringify({ model, stream, messages: [{ role: "user", content: stream ? twentyWords : "hello" }] }),
          headers: jsonHeaders
        }
        // A failed request rejects the loop: every figure is of answered requests.
        await closedLoop(pool, scenario, warmup, CONCURRENCY)
        const { cpuPerRequest } = await withCpu(gateway.child.pid!, () => closedLoop(pool, scenario, requests, CONCURRENCY), served)
        row[stream ? "stream_cpu_us_per_request" : "json_cpu_us_per_request"] = cpuPerRequest
      }
      rows.push(row)
    }
  } finally {
    await pools.close()
    await stopProcess(gateway.child)
    await stopProcess(upstream.child)
  }
  return rows
}

if (import.meta.main) {
  const rows = await runCloudsBench(process.argv.includes("--quick"))
  console.log("gateway CPU per request by target kind (an OpenAI Chat Completions caller)")
  console.table(rows)
}
