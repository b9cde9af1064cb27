/**
 * Memory after a burst of large request bodies (issue 29, point 4): a fresh
 * gateway's resident memory idle, then a bounded burst of requests with
 * ~10 MB bodies (chat JSON, embeddings JSON, a file upload streamed through,
 * a transcription upload spooled to disk) at
 * concurrency 12 against the fake upstream, then RSS sampled every second for
 * 60 s (30 s with `--quick`). The goal: RSS back within 1.5× of idle by the
 * end of that window.
 *
 * Two gateways, one after the other: the production bundle as `npm start`
 * runs it (START_NODE_FLAGS, START_ENV), and the source with Node's default
 * flags (`npm run gateway`, `node src/main.ts`).
 *
 * `node bench/body-burst.ts [--quick] [--diagnose]`; `npm run bench` runs it
 * too. `--diagnose` starts each gateway with an inspector on loopback and
 * prints `process.memoryUsage()` (heap, external, array buffers) beside RSS,
 * to tell the V8 heap from buffers and from memory malloc keeps.
 *
 * Bounded: a fixed count of requests per burst (each loop also has a
 * deadline) and a fixed sampling window.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"
import { closedLoop, root, round, sleep, startProcess, stopProcess } from "./lib.ts"
import type { Scenario } from "./lib.ts"
import { jsonHeaders, START_NODE_FLAGS, startGateway } from "./performance.ts"

const BODY_BYTES = 10 * 1024 * 1024
const CONCURRENCY = 12

/** ~`bytes` of prose-like ASCII text (words and spaces, no escapes). */
const text = (bytes: number, seed: string): string => {
  const unit = `${seed} lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor `
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes)
}

/** The bursts: each a scenario and how many requests of it. */
const bursts = (origin: string, quick: boolean): ReadonlyArray<{ readonly label: string; readonly scenario: Scenario; readonly count: number }> => {
  const boundary = "----bench-body-burst"
  const upload = [
    `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n`,
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`,
    text(BODY_BYTES, "file"),
    `\r\n--${boundary}--\r\n`
  ].join("")
  return [
    {
      label: "chat",
      count: quick ? 24 : 80,
      scenario: {
        name: "chat",
        origin,
        path: "/v1/chat/completions",
        headers: jsonHeaders,
        body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: text(BODY_BYTES, "chat") }] })
      }
    },
    {
      label: "embeddings",
      count: quick ? 8 : 20,
      scenario: {
        name: "embeddings",
        origin,
        path: "/v1/embeddings",
        headers: jsonHeaders,
        body: JSON.stringify({ model: "gpt-4o", input: text(BODY_BYTES, "embed") })
      }
    },
    {
      label: "file upload",
      count: quick ? 8 : 20,
      scenario: { name: "files", origin, path: "/v1/files", headers: { "content-type": `multipart/form-data; boundary=${boundary}`, authorization: "Bearer bench" }, body: upload }
    },
    {
      // Spooled to a temporary file by the gateway (src/http/multipart.ts), then read back for the upstream.
      label: "transcription",
      count: quick ? 8 : 20,
      scenario: {
        name: "transcription",
        origin,
        path: "/v1/audio/transcriptions",
        headers: { "content-type": `multipart/form-data; boundary=${boundary}`, authorization: "Bearer bench" },
        body: upload.replace('name="purpose"\r\n\r\nbatch', 'name="model"\r\n\r\ngpt-4o').replace('filename="big.jsonl"', 'filename="big.wav"').replace("application/jsonl", "audio/wav")
      }
    }
  ]
}

/** RSS now, at its peak, and its anonymous part (V8's heap, buffers, malloc's memory; the rest is code), in MiB. */
const residentMiB = (pid: number): { readonly rss: number; readonly peak: number; readonly anon: number } => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kib = (text: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0)
  return { rss: round(kib(status, "VmRSS") / 1024, 1), peak: round(kib(status, "VmHWM") / 1024, 1), anon: round(kib(status, "RssAnon") / 1024, 1) }
}

/** The resident part (MiB) of malloc's main heap (`[heap]` in /proc/PID/smaps): what glibc keeps after frees. */
const mallocHeapMiB = (pid: number): number => {
  const smaps = readFileSync(`/proc/${pid}/smaps`, "utf8")
  const at = smaps.indexOf("[heap]")
  if (at === -1) return 0
  return round(Number(/Rss:\s+(\d+)/.exec(smaps.slice(at))?.[1] ?? 0) / 1024, 1)
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })

/** `process.memoryUsage()` of a gateway started with `--inspect=127.0.0.1:PORT`, in MiB. */
const inspectMemory = async (port: number): Promise<Record<string, number>> => {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>
  const socket = new WebSocket(target.webSocketDebuggerUrl)
  try {
    await new Promise((resolve, reject) => {
      socket.onopen = resolve
      socket.onerror = reject
    })
    const reply = new Promise<string>((resolve) => {
      socket.onmessage = (event) => resolve(String(event.data))
    })
    socket.send(JSON.stringify({ id: 1, method: "Runtime.evaluate", params: { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true } }))
    const usage = JSON.parse((JSON.parse(await reply) as { result: { result: { value: string } } }).result.result.value) as Record<string, number>
    return Object.fromEntries(Object.entries(usage).map(([key, bytes]) => [key, round(bytes / 1024 / 1024, 1)]))
  } finally {
    socket.close()
  }
}

export interface BodyBurstRow {
  readonly gateway: string
  readonly [figure: string]: string | number
}

/** One fresh gateway through idle, the bursts and the window after them. */
const measure = async (dir: string, upstream: string, label: string, source: boolean, quick: boolean, diagnose: boolean): Promise<BodyBurstRow> => {
  const window = quick ? 30 : 60
  const inspect = diagnose ? await freePort() : undefined
  const flagsForInspect = inspect === undefined ? undefined : [`--inspect=127.0.0.1:${inspect}`]
  const gateway = await startGateway(dir, `gateway-body-burst-${source ? "source" : "start"}`, upstream, {
    source,
    ...(flagsForInspect === undefined ? {} : { nodeFlags: source ? flagsForInspect : [...START_NODE_FLAGS, ...flagsForInspect] })
  })
  const pid = gateway.child.pid!
  const pool = new Pool(gateway.url, { connections: CONCURRENCY })
  const heap = async (when: string) => {
    if (inspect !== undefined) console.log(`${label}, ${when}: RSS ${residentMiB(pid).rss} MiB`, await inspectMemory(inspect))
  }
  try {
    await sleep(2000)
    const idle = residentMiB(pid)
    const idleHeap = mallocHeapMiB(pid)
    await heap("idle")
    const served: Record<string, number> = {}
    let burstPeak = idle.rss
    const sampler = setInterval(() => {
      burstPeak = Math.max(burstPeak, residentMiB(pid).rss)
    }, 100)
    const started = performance.now()
    try {
      for (const { label: kind, scenario, count } of bursts(gateway.url, quick)) {
        served[kind] = (await closedLoop(pool, scenario, count, CONCURRENCY, 60)).requests
      }
    } finally {
      clearInterval(sampler)
    }
    const burstSeconds = (performance.now() - started) / 1000
    const afterBurst = residentMiB(pid)
    await heap("after the burst")
    const samples: Array<number> = []
    for (let second = 1; second <= window; second++) {
      await sleep(1000)
      samples.push(residentMiB(pid).rss)
    }
    const end = residentMiB(pid)
    await heap(`${window} s after`)
    const at = (second: number) => samples[Math.min(second, samples.length) - 1]
    const settledAt = samples.findIndex((rss) => rss <= 1.5 * idle.rss)
    return {
      gateway: label,
      requests: Object.entries(served).map(([kind, n]) => `${kind} ${n}`).join(", "),
      burst_s: round(burstSeconds, 1),
      rss_idle_mib: idle.rss,
      rss_peak_mib: end.peak,
      rss_after_burst_mib: afterBurst.rss,
      rss_10s_mib: at(10),
      rss_30s_mib: at(30),
      ...(window >= 60 ? { rss_60s_mib: at(60) } : {}),
      anon_end_mib: end.anon,
      malloc_heap_idle_end_mib: `${idleHeap} / ${mallocHeapMiB(pid)}`,
      [`ratio_${window}s_to_idle`]: round(at(window) / idle.rss, 2),
      [`within_1.5x_at_${window}s`]: at(window) <= 1.5 * idle.rss ? "yes" : "no",
      first_second_within_1_5x: settledAt === -1 ? "never" : settledAt + 1
    }
  } finally {
    await pool.destroy()
    await stopProcess(gateway.child)
  }
}

/** The figures for `npm start` and for the source with default flags; the bundle is built first unless `built`. */
export const runBodyBurstBench = async (options: { readonly quick: boolean; readonly diagnose?: boolean; readonly built?: boolean }): Promise<ReadonlyArray<BodyBurstRow>> => {
  if (options.built !== true) {
    const build = spawnSync(process.execPath, ["scripts/build.ts"], { cwd: root, stdio: "inherit" })
    if (build.status !== 0) throw new Error("npm run build failed")
  }
  const dir = mkdtempSync(join(tmpdir(), "gateway-body-burst-"))
  const upstream = await startProcess(["test/fixtures/serve.ts", "--kind", "openai"], "1", dir, "upstream")
  const url = JSON.parse(upstream.line).url as string
  try {
    const rows: Array<BodyBurstRow> = []
    rows.push(await measure(dir, url, "npm start (bundle, start flags)", false, options.quick, options.diagnose === true))
    rows.push(await measure(dir, url, "source, default flags", true, options.quick, options.diagnose === true))
    return rows
  } finally {
    await stopProcess(upstream.child)
  }
}

if (import.meta.main) {
  const rows = await runBodyBurstBench({ quick: process.argv.includes("--quick"), diagnose: process.argv.includes("--diagnose") })
  console.table(rows)
  process.exit(0)
}
