/**
 * Uploads and downloads stream through the gateway: a 100 MiB file goes up
 * through `POST /v1/files` and comes back through `/content`, and a 100 MiB
 * transcription form is spooled to disk and re-streamed, while the gateway's
 * resident memory stays flat.
 *
 * The gateway runs as a child process (`node src/main.ts serve`) so its
 * memory is its own: RSS is read from `/proc/<pid>/status`. The fake upstream
 * runs here; it hashes uploads as they stream and generates downloads slice by
 * slice, so it holds no file whole either. The test itself generates the upload
 * and hashes the download as streams.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { generatedContentSlice, startFakeUpstream } from "../fixtures/fake-upstream.ts"
import type { FakeUpstream } from "../fixtures/fake-upstream.ts"

const MiB = 1024 * 1024
const BIG = 100 * MiB
const CHUNK = 64 * 1024
/**
 * Allowed growth of the gateway's resident set while 100 MiB pass through.
 * Streaming keeps only a few 64 KiB chunks in flight per direction (socket
 * buffers, undici's queue, the response's high-water mark), but the chunks it
 * has finished with are off-heap buffers that stay resident until V8's next
 * collection, which it paces by that external memory: about one full
 * collection per 30 MiB of dead chunks. Measured growth (after the warm-up):
 * uploads 0 to 15 MiB, downloads 0 to 46 MiB, the same for 100 MiB as for
 * 400 MiB, so it does not grow with the body. A body held whole adds at least
 * 100 MiB (measured ~110 MiB in either direction); 64 MiB lies between.
 */
const MAX_GROWTH = 64 * MiB
/**
 * Transferred before measuring, each way. V8 sizes its young generation by
 * allocation rate, so the first large transfer grows the heap once by ~50 MiB
 * whatever its size; the warm-up reaches that steady state first. It moves
 * 8 MiB files so that a gateway which buffered bodies would not inflate its
 * baseline by more than that (checked with a deliberately buffering gateway:
 * the measured growth is then ~110 MiB in either direction).
 */
const WARM_UP = 64 * MiB
const WARM_UP_PIECE = 8 * MiB

const repoRoot = fileURLToPath(new URL("../..", import.meta.url))

let fake: FakeUpstream
let gateway: ChildProcess
let baseUrl: string
let workDir: string

interface Memory {
  readonly rss: number
  readonly hwm: number
}

/** VmRSS (current) and VmHWM (peak so far) of a process, in bytes. */
const memoryOf = (pid: number): Memory => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)![1]) * 1024
  return { rss: field("VmRSS"), hwm: field("VmHWM") }
}

/**
 * Runs a transfer while sampling the gateway's RSS; returns its peak during
 * the transfer. When the transfer pushed the process's high-water mark up, that
 * mark is the exact peak; otherwise the samples are (and the peak was below an
 * earlier one anyway).
 */
const peakDuring = async <A>(transfer: () => Promise<A>): Promise<{ readonly result: A; readonly peak: number; readonly before: Memory }> => {
  const pid = gateway.pid!
  const before = memoryOf(pid)
  let sampled = before.rss
  const timer = setInterval(() => {
    sampled = Math.max(sampled, memoryOf(pid).rss)
  }, 20)
  try {
    const result = await transfer()
    const after = memoryOf(pid)
    return { result, before, peak: after.hwm > before.hwm ? after.hwm : Math.max(sampled, after.rss) }
  } finally {
    clearInterval(timer)
  }
}

/** Starts the gateway child on a free port and resolves its base URL from the `listening` log line. */
const startChild = (configPath: string): Promise<string> =>
  new Promise((resolve, reject) => {
    gateway = spawn(process.execPath, ["src/main.ts", "serve", "--config", configPath], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? "", TMPDIR: workDir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    const timer = setTimeout(() => reject(new Error(`gateway did not start: ${stderr}`)), 15_000)
    gateway.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    gateway.once("exit", (code) => reject(new Error(`gateway exited with ${code}: ${stderr}`)))
    gateway.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      for (const line of stdout.split("\n")) {
        if (!line.includes('"listening"')) continue
        const record = JSON.parse(line) as { msg: string; port: number }
        if (record.msg !== "listening") continue
        clearTimeout(timer)
        resolve(`http://127.0.0.1:${record.port}`)
      }
      // Only the start-up lines matter; the rest is drained unread.
      if (stdout.length > 64 * 1024) stdout = ""
    })
  })

type Fields = ReadonlyArray<readonly [name: string, value: string]>

/**
 * A multipart form with `size` pseudo-random bytes as its `file` part,
 * generated chunk by chunk, between the given fields; `sha256` of the file is
 * ready when the stream ends.
 */
const multipartForm = (size: number, before: Fields, after: Fields) => {
  const boundary = `upload-memory-${randomBytes(8).toString("hex")}`
  const field = ([name, value]: readonly [string, string]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  const head = Buffer.from(
    before.map(field).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
  )
  const tail = Buffer.from(`\r\n${after.map(field).join("")}--${boundary}--\r\n`)
  const block = randomBytes(CHUNK)
  const hash = createHash("sha256")
  const state = { sha256: "" }
  function* chunks() {
    yield head
    for (let offset = 0; offset < size; offset += CHUNK) {
      const chunk = Buffer.from(block.subarray(0, Math.min(CHUNK, size - offset)))
      chunk.writeUInt32BE(offset / CHUNK, 0)
      hash.update(chunk)
      yield chunk
    }
    state.sha256 = hash.digest("hex")
    yield tail
  }
  return { body: Readable.from(chunks(), { objectMode: false }), contentType: `multipart/form-data; boundary=${boundary}`, length: head.length + size + tail.length, state }
}

const postForm = (path: string, size: number, before: Fields, after: Fields) =>
  new Promise<{ readonly status: number; readonly json: Record<string, unknown>; readonly sha256: string }>((resolve, reject) => {
    const form = multipartForm(size, before, after)
    const request = Http.request(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": form.contentType, "content-length": String(form.length) }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => {
        text += chunk
      })
      response.on("end", () => resolve({ status: response.statusCode ?? 0, json: JSON.parse(text), sha256: form.state.sha256 }))
      response.on("error", reject)
    })
    request.on("error", reject)
    form.body.pipe(request)
  })

const upload = (size: number) => postForm("/v1/files", size, [["purpose", "batch"]], [])

/** Downloads a file's content, hashing it as it streams. */
const download = (id: string) =>
  new Promise<{ readonly status: number; readonly size: number; readonly sha256: string }>((resolve, reject) => {
    Http.get(`${baseUrl}/v1/files/${id}/content`, (response) => {
      const hash = createHash("sha256")
      let size = 0
      response.on("data", (chunk: Buffer) => {
        size += chunk.byteLength
        hash.update(chunk)
      })
      response.on("end", () => resolve({ status: response.statusCode ?? 0, size, sha256: hash.digest("hex") }))
      response.on("error", reject)
    }).on("error", reject)
  })

/** sha256 of the fake's generated content of a stored file too large to keep. */
const generatedSha256 = (size: number): string => {
  const hash = createHash("sha256")
  for (let offset = 0; offset < size; offset += CHUNK) hash.update(generatedContentSlice(offset, Math.min(CHUNK, size - offset)))
  return hash.digest("hex")
}

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "upload-memory-"))
  fake = await startFakeUpstream({ kind: "openai", recordBodyLimit: 64 * 1024 })
  const configPath = join(workDir, "gateway.toml")
  writeFileSync(
    configPath,
    [
      "[server]",
      'host = "127.0.0.1"',
      "port = 0",
      "",
      "[providers.openai]",
      `base_url = "${fake.url}/v1"`,
      'models = ["gpt-4o", "whisper-1"]',
      'credential = "none"',
      "",
      "[telemetry]",
      "enabled = false",
      'log_level = "info"',
      ""
    ].join("\n")
  )
  baseUrl = await startChild(configPath)
  // Warm up both paths (code loaded, pools and buffers allocated) before measuring.
  for (let i = 0; i < WARM_UP / WARM_UP_PIECE; i++) {
    const warm = await upload(WARM_UP_PIECE)
    expect(warm.status).toBe(200)
    expect((await download(String(warm.json.id))).size).toBe(WARM_UP_PIECE)
  }
}, 60_000)

afterAll(async () => {
  if (gateway !== undefined && gateway.exitCode === null) {
    const exited = new Promise((resolve) => gateway.once("exit", resolve))
    gateway.kill("SIGTERM")
    await exited
  }
  await fake?.close()
  rmSync(workDir, { recursive: true, force: true })
})

describe("upload and download memory", () => {
  let uploadedId = ""

  it("uploads 100 MiB through the gateway intact without its memory growing", async () => {
    const { result, before, peak } = await peakDuring(() => upload(BIG))
    expect(result.status).toBe(200)
    expect(result.json).toMatchObject({ object: "file", bytes: BIG, filename: "big.bin", purpose: "batch" })
    uploadedId = String(result.json.id)
    expect(fake.files.get(uploadedId)).toMatchObject({ size: BIG, sha256: result.sha256 })
    expect(peak - before.rss).toBeLessThan(MAX_GROWTH)
  }, 120_000)

  it("downloads 100 MiB through the gateway intact without its memory growing", async () => {
    expect(uploadedId).not.toBe("")
    const { result, before, peak } = await peakDuring(() => download(uploadedId))
    expect(result.status).toBe(200)
    expect(result.size).toBe(BIG)
    expect(result.sha256).toBe(generatedSha256(BIG))
    expect(peak - before.rss).toBeLessThan(MAX_GROWTH)
  }, 120_000)

  it("transcribes a 100 MiB form spooled to disk (the model field after the file) without its memory growing", async () => {
    // As the OpenAI SDK orders it: the file first, then the model that routes it.
    const { result, before, peak } = await peakDuring(() => postForm("/v1/audio/transcriptions", BIG, [], [["model", "whisper-1"]]))
    expect(result.status).toBe(200)
    expect(result.json.text).toBe(`transcript of big.bin: ${BIG} bytes, sha256 ${result.sha256}, model whisper-1`)
    expect(peak - before.rss).toBeLessThan(MAX_GROWTH)
    // The spooled copy is gone once the response has been sent (bounded wait).
    const spooled = () => readdirSync(workDir).filter((name) => name.startsWith("gateway-form-"))
    for (let i = 0; i < 200 && spooled().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(spooled()).toEqual([])
  }, 120_000)
})
