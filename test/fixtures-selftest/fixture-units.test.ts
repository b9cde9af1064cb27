/**
 * Unit tests of the fixture's building blocks: multipart parser, frame builders, reply planning
 * options, and the standalone process.
 */
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { once } from "node:events"
import { createInterface } from "node:readline"
import OpenAI from "openai"
import { describe, expect, it } from "vitest"
import {
  anthropicStream,
  openAiChunk,
  openAiStream,
  splitPieces,
  startFakeUpstream
} from "../fixtures/fake-upstream.ts"
import { MultipartParser } from "../fixtures/multipart.ts"

const sha = (b: Buffer): string => createHash("sha256").update(b).digest("hex")

const buildMultipart = (boundary: string, file: Buffer): Buffer =>
  Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="tags[]"\r\n\r\na\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="tags[]"\r\n\r\nb\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])

describe("MultipartParser", () => {
  it("parses identically under arbitrary chunk splits, including inside the delimiter", () => {
    const boundary = "----bnd123"
    // File content that contains near-delimiters and CRLFs.
    const file = Buffer.concat([Buffer.from("\r\n------bnd12\r\n--"), Buffer.alloc(5000, 0xab), Buffer.from("\r\n------bnd12")])
    const body = buildMultipart(boundary, file)
    let seed = 42
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    for (let trial = 0; trial < 200; trial++) {
      const p = new MultipartParser(boundary, 1 << 20)
      let off = 0
      while (off < body.length) {
        const n = 1 + rand(trial % 2 === 0 ? 7 : 300)
        p.write(body.subarray(off, off + n))
        off += n
      }
      const s = p.end()
      expect(s.error).toBeUndefined()
      expect(s.fields).toEqual({ purpose: "batch", "tags[]": "a" })
      expect(s.allFields).toEqual([["purpose", "batch"], ["tags[]", "a"], ["tags[]", "b"]])
      expect(s.files).toHaveLength(1)
      expect(s.files[0]).toMatchObject({ name: "file", filename: "x.bin", contentType: "application/octet-stream", size: file.length, sha256: sha(file) })
      expect(s.files[0].content?.equals(file)).toBe(true)
    }
  })

  it("does not keep large files, reports truncated bodies", () => {
    const file = Buffer.alloc(10_000, 1)
    const p = new MultipartParser("b", 1000)
    p.write(buildMultipart("b", file))
    const s = p.end()
    expect(s.files[0].size).toBe(10_000)
    expect(s.files[0].content).toBeUndefined()
    expect(s.files[0].prefix.length).toBe(64)
    const q = new MultipartParser("b", 1000)
    q.write(buildMultipart("b", file).subarray(0, 500))
    expect(q.end().error).toMatch(/ended early/)
  })
})

describe("frame builders", () => {
  it("openAiChunk / openAiStream produce real chunk objects", () => {
    const frame = openAiChunk({ content: "x" }, { id: "chatcmpl-1", model: "m", created: 5 })
    expect(frame.endsWith("\n\n")).toBe(true)
    expect(JSON.parse(frame.slice(6))).toEqual({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 5,
      model: "m",
      system_fingerprint: "fp_fake",
      choices: [{ index: 0, delta: { content: "x" }, logprobs: null, finish_reason: null }]
    })
    const frames = openAiStream({ content: ["a"], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })
    expect(frames).toHaveLength(5)
    expect(JSON.parse(frames[3].slice(6))).toMatchObject({ choices: [], usage: { total_tokens: 2 } })
    expect(JSON.parse(frames[0].slice(6)).usage).toBeNull()
  })

  it("anthropicStream emits the documented order with a thinking block", () => {
    const frames = anthropicStream({
      blocks: [{ type: "thinking", pieces: ["hmm"] }, { type: "text", pieces: ["a"] }, { type: "tool_use", id: "toolu_1", name: "t", pieces: ["", "{}"] }]
    })
    const names = frames.map((f) => /^event: (\S+)/.exec(f)?.[1])
    expect(names).toEqual([
      "message_start",
      "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
      "message_delta", "message_stop"
    ])
    expect(frames.at(-2)).toContain('"stop_reason":"tool_use"')
  })

  it("splitPieces round-trips", () => {
    for (const t of ["", "a", " a  b ", "echo: hello there\nnew line"]) expect(splitPieces(t).join("")).toBe(t)
  })
})

describe("reply options", () => {
  it("stop sequences, tool preamble, custom trigger, latency", async () => {
    const fake = await startFakeUpstream({ kind: "openai", toolTrigger: "weather?", toolPreamble: "Checking.", toolArguments: { city: "Rome" }, latencyMs: 50 })
    const client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "k", maxRetries: 0 })
    const started = Date.now()
    const stopped = await client.chat.completions.create({ model: "m", stop: ["STOP"], messages: [{ role: "user", content: "say a STOP b" }] })
    expect(Date.now() - started).toBeGreaterThanOrEqual(45)
    expect(stopped.choices[0].message.content).toBe("echo: say a ")
    expect(stopped.choices[0].finish_reason).toBe("stop")
    const tools = [{ type: "function" as const, function: { name: "w", parameters: { type: "object" } } }]
    const final = await client.chat.completions
      .stream({ model: "m", tools, messages: [{ role: "user", content: "weather? now" }] })
      .finalChatCompletion()
    expect(final.choices[0].message.content).toBe("Checking.")
    const call = final.choices[0].message.tool_calls?.[0]
    expect(call?.type === "function" && call.function.arguments).toBe('{"city":"Rome"}')
    const none = await client.chat.completions.create({ model: "m", tools, tool_choice: "none", messages: [{ role: "user", content: "weather? now" }] })
    expect(none.choices[0].finish_reason).toBe("stop")
    await fake.close()
  })
})

describe("standalone process", () => {
  it("serve.ts prints its URL and serves", async () => {
    const child = spawn("node_modules/.bin/node", ["test/fixtures/serve.ts", "--kind", "anthropic"], { stdio: ["ignore", "pipe", "inherit"] })
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string]
      const { url, kind } = JSON.parse(line) as { url: string; kind: string }
      expect(kind).toBe("anthropic")
      const res = await fetch(`${url}/v1/messages/count_tokens`, {
        method: "POST",
        headers: { "anthropic-version": "2023-06-01" },
        body: JSON.stringify({ model: "c", messages: [{ role: "user", content: "hi" }] })
      })
      expect(((await res.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0)
    } finally {
      child.kill("SIGTERM")
      await once(child, "exit")
    }
  })
})
