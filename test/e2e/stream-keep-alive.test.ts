/**
 * Streams one after another on one keep-alive connection: each is framed whole
 * (its chunks, its terminating chunk) however many events arrive in one
 * upstream read, and the next request on the connection gets its own answer.
 * The writer sends the events of one read in one write (it corks the socket
 * for the turn); a cork left behind would hold or garble the next response.
 */
import { Client } from "undici"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openAiStream } from "../fixtures/sse.ts"
import { gatewayWithFakes } from "./harness.ts"

const { fakes, gateway } = gatewayWithFakes({ openai: { kind: "openai" } }, (fakes) => ({
  providers: { openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "none" } }
}))

let client: Client
let connections = 0
beforeAll(() => {
  client = new Client(gateway.url, { pipelining: 1 })
  client.on("connect", () => connections++)
})
afterAll(() => client.close())

/** Every event of the stream in one write of the upstream: one read of the gateway. */
const inOneWrite = (words: Array<string>) =>
  fakes.openai.script({
    kind: "custom",
    handle: async ({ res }) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.end(openAiStream({ content: words }).join(""))
    }
  })

describe("streams on one keep-alive connection", () => {
  it("five streams in a row, each with all its events in one upstream read, arrive whole and in order", async () => {
    for (let index = 0; index < 5; index++) {
      const words = Array.from({ length: 20 }, (_, word) => `r${index}w${word} `)
      inOneWrite(words)
      const response = await client.request({
        path: "/v1/chat/completions",
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: `request ${index}` }] })
      })
      expect(response.statusCode).toBe(200)
      const text = await response.body.text()
      const deltas = text.split("\n\n").filter((frame) => frame.startsWith("data: {")).map((frame) => JSON.parse(frame.slice(6)).choices[0]?.delta?.content ?? "")
      expect(deltas.join("")).toBe(words.join(""))
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true)
    }
    expect(connections).toBe(1)
  })
})
