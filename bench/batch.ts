/**
 * `node bench/batch.ts [lines] [--latency MS]`: `gateway batch` on a file of
 * `lines` chat requests (default 100,000) at concurrency 64 through a fake
 * upstream in its own process, against the same upstream driven directly at
 * the same concurrency. Reports lines per second of each, and the batch
 * process's RSS sampled every 200 ms (start, peak, end), so a growing heap
 * would show. Bounded: one pass over the file, a deadline.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"

const root = new URL("..", import.meta.url).pathname
const LINES = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 100_000)
const latencyAt = process.argv.indexOf("--latency")
const LATENCY = latencyAt === -1 ? 0 : Number(process.argv[latencyAt + 1])
const CONCURRENCY = 64
const DEADLINE_MS = 600_000

const rssMiB = (pid: number): number => {
  const match = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return match === null ? 0 : Math.round((Number(match[1]) / 1024) * 10) / 10
}

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-batch-bench-"))
  const upstream = spawn(process.execPath, ["test/fixtures/serve.ts", "--kind", "openai", ...(LATENCY > 0 ? ["--latency-ms", String(LATENCY)] : [])], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
  const url = await new Promise<string>((resolve) => upstream.stdout!.once("data", (chunk: Buffer) => resolve(JSON.parse(chunk.toString().split("\n")[0]).url)))
  try {
    const input = join(dir, "input.jsonl")
    await new Promise<void>((resolve) => {
      const out = createWriteStream(input)
      let i = 0
      const more = () => {
        while (i < LINES) {
          const line = `${JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "gpt-4o", messages: [{ role: "user", content: `request number ${i}` }] } })}\n`
          i++
          if (!out.write(line)) return void out.once("drain", more)
        }
        out.end(resolve)
      }
      more()
    })
    const config = join(dir, "gateway.toml")
    writeFileSync(config, `[server]\n\n[providers.openai]\nbase_url = "${url}/v1"\nmodels = ["gpt-4o"]\ncredential = "none"\n\n[telemetry]\nenabled = false\n`)

    // The upstream alone, at the same concurrency.
    const pool = new Pool(url, { connections: CONCURRENCY })
    const directCount = Math.min(LINES, 20_000)
    let issued = 0
    const directStarted = performance.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (issued < directCount) {
        const i = issued++
        const response = await pool.request({ method: "POST", path: "/v1/chat/completions", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: `request number ${i}` }] }) })
        await response.body.dump()
      }
    }))
    const directRate = directCount / ((performance.now() - directStarted) / 1000)
    await pool.close()

    const output = join(dir, "output.jsonl")
    const started = performance.now()
    const job = spawn(process.execPath, [...(process.env.BATCH_NODE_FLAGS ?? "").split(" ").filter(Boolean), "src/main.ts", "batch", input, "--out", output, "--config", config, "--concurrency", String(CONCURRENCY)], { cwd: root, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    job.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const samples: Array<number> = []
    const sampler = setInterval(() => {
      try {
        samples.push(rssMiB(job.pid!))
      } catch {
        // exited
      }
    }, 200)
    const deadline = setTimeout(() => job.kill("SIGKILL"), DEADLINE_MS)
    const code = await new Promise<number | null>((resolve) => job.once("exit", resolve))
    clearTimeout(deadline)
    clearInterval(sampler)
    const seconds = (performance.now() - started) / 1000
    const result = {
      lines: LINES,
      concurrency: CONCURRENCY,
      upstream_latency_ms: LATENCY,
      exit_code: code,
      batch_lines_per_second: Math.round(LINES / seconds),
      direct_requests_per_second: Math.round(directRate),
      batch_seconds: Math.round(seconds * 10) / 10,
      rss_mib_first_sample: samples[0],
      rss_mib_peak: Math.max(...samples),
      rss_mib_last_sample: samples.at(-1),
      rss_mib_at_quarters: [0.25, 0.5, 0.75].map((q) => samples[Math.floor(samples.length * q)])
    }
    console.table(result)
    console.log(stderr.trim().split("\n").slice(-3).join("\n"))
  } finally {
    upstream.kill("SIGTERM")
    rmSync(dir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
