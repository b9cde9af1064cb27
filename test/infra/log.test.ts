import { spawn } from "node:child_process"
import { describe, expect, it, vi } from "vitest"
import { JsonLog } from "../../src/infra/log.ts"

const turn = () => new Promise((resolve) => setImmediate(resolve))

const sink = () => {
  const writes: Array<string> = []
  return { writes, write: (text: string) => void writes.push(text), writableLength: 0 }
}

describe("JsonLog", () => {
  it("writes every line of one event-loop turn in one write, before the loop sleeps (no timer)", async () => {
    const out = sink()
    const log = new JsonLog("info", out)
    log.log("info", "request", { status: 200 })
    log.log("info", "request", { status: 201 })
    log.log("debug", "below the level")
    expect(out.writes).toEqual([])
    await turn()
    expect(out.writes).toHaveLength(1)
    const lines = out.writes[0].trimEnd().split("\n").map((line) => JSON.parse(line))
    expect(lines.map((line) => [line.msg, line.status])).toEqual([["request", 200], ["request", 201]])
  })

  it("stamps each line with its ISO time to the millisecond, across seconds and with leading zeros", async () => {
    const instants = [
      Date.UTC(2026, 10, 27, 20, 43, 47, 5),
      Date.UTC(2026, 10, 27, 20, 43, 47, 5),
      Date.UTC(2026, 10, 27, 20, 43, 47, 42),
      Date.UTC(2026, 10, 27, 20, 43, 47, 999),
      Date.UTC(2026, 10, 27, 20, 43, 48, 0),
      Date.UTC(2026, 10, 27, 23, 59, 59, 300),
      Date.UTC(2026, 10, 28, 0, 0, 0, 70)
    ]
    const out = sink()
    const log = new JsonLog("info", out)
    const now = vi.spyOn(Date, "now")
    try {
      for (const instant of instants) {
        now.mockReturnValueOnce(instant)
        log.log("info", "tick")
      }
    } finally {
      now.mockRestore()
    }
    await turn()
    const times = out.writes.join("").trimEnd().split("\n").map((line) => JSON.parse(line).time)
    expect(times).toEqual(instants.map((instant) => new Date(instant).toISOString()))
  })

  it("drops lines while the reader is behind by more than 16 MiB and says how many once it caught up", async () => {
    const out = sink()
    const log = new JsonLog("info", out)
    log.log("info", "kept")
    await turn()
    out.writableLength = 17 * 1024 * 1024
    for (let i = 0; i < 5; i++) log.log("info", "dropped")
    await turn()
    log.log("info", "dropped too")
    await turn()
    expect(out.writes).toHaveLength(1)
    out.writableLength = 0
    log.log("info", "after")
    await turn()
    const lines = out.writes[1].trimEnd().split("\n").map((line) => JSON.parse(line))
    expect(lines.map((line) => line.msg)).toEqual(["after", "log lines dropped"])
    expect(lines[1]).toMatchObject({ level: "warn", dropped: 6 })
  })

  it("in workers mode tags every line and keeps each write within PIPE_BUF", async () => {
    const out = sink()
    const log = new JsonLog("info", out, { worker: 3 })
    for (let i = 0; i < 40; i++) log.log("info", "request", { path: "x".repeat(300) })
    await turn()
    expect(out.writes.length).toBeGreaterThan(1)
    for (const write of out.writes) expect(Buffer.byteLength(write)).toBeLessThanOrEqual(4096)
    const lines = out.writes.join("").trimEnd().split("\n").map((line) => JSON.parse(line))
    expect(lines).toHaveLength(40)
    expect(lines.every((line) => line.worker === 3)).toBe(true)
  })

  it("in workers mode counts bytes, not characters, against PIPE_BUF", async () => {
    const out = sink()
    const log = new JsonLog("info", out, { worker: 1 })
    // 300 characters, 600 bytes of UTF-8 each.
    for (let i = 0; i < 20; i++) log.log("info", "request", { model: "é".repeat(300) })
    await turn()
    for (const write of out.writes) expect(Buffer.byteLength(write)).toBeLessThanOrEqual(4096)
    expect(out.writes.join("").trimEnd().split("\n")).toHaveLength(20)
  })

  it("a process whose stdout pipe is not read keeps serving its loop and bounds what it queues", async () => {
    // 60 MiB of lines into a pipe nobody reads for a while: Node queues them unless the log drops.
    const script = `
      import { JsonLog } from ${JSON.stringify(new URL("../../src/infra/log.ts", import.meta.url).pathname)}
      const log = new JsonLog("info")
      const padding = "x".repeat(1000)
      let round = 0
      const tick = () => {
        for (let i = 0; i < 1000; i++) log.log("info", "request", { round, padding })
        if (++round < 60) return setImmediate(tick)
        setImmediate(() => process.stderr.write(JSON.stringify({ queued: process.stdout.writableLength }) + "\\n"))
      }
      tick()
    `
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] })
    child.stdout.pause()
    let report = ""
    child.stderr.on("data", (chunk: Buffer) => (report += chunk.toString()))
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`no report: ${report}`)), 20_000)
      const poll = setInterval(() => {
        if (report.includes("\n")) {
          clearInterval(poll)
          clearTimeout(deadline)
          resolve()
        }
      }, 20)
    })
    const { queued } = JSON.parse(report.split("\n")[0])
    expect(queued).toBeLessThan(20 * 1024 * 1024)
    // The reader catches up: the lines that were dropped are counted in one warning.
    let text = ""
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()))
    child.stdout.resume()
    await new Promise((resolve) => child.once("exit", resolve))
    const lines = text.trimEnd().split("\n").map((line) => JSON.parse(line))
    const warning = lines.find((line) => line.msg === "log lines dropped")
    const kept = lines.filter((line) => line.msg === "request").length
    expect(kept).toBeGreaterThan(0)
    expect(kept + (warning?.dropped ?? 0)).toBe(60_000)
    expect(warning?.dropped).toBeGreaterThan(0)
  }, 30_000)
})
