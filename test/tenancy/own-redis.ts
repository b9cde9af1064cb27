/**
 * A redis-server of a test's own, on a free loopback port, that the test may
 * kill and start again (never the shared one at 6379). Nothing is persisted.
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { createServer, connect } from "node:net"

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/** Whether something answers PING on the port. */
const answers = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1")
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(500, () => done(false))
    socket.once("error", () => done(false))
    socket.once("connect", () => socket.write("PING\r\n"))
    socket.once("data", (data) => done(data.toString().startsWith("+PONG")))
  })

export interface OwnRedis {
  readonly port: number
  readonly url: string
  /** SIGKILL: the server vanishes mid-run, connections reset. */
  readonly kill: () => Promise<void>
  /** Starts it again on the same port (empty). */
  readonly restart: () => Promise<void>
}

export const startOwnRedis = async (): Promise<OwnRedis> => {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" })
    const deadline = Date.now() + 5_000
    while (!(await answers(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
  const kill = async () => {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null) return
    await new Promise<void>((resolve) => {
      running.once("exit", () => resolve())
      running.kill("SIGKILL")
    })
  }
  await start()
  return { port, url: `redis://127.0.0.1:${port}`, kill, restart: start }
}
