/**
 * The Responses API's state on every provider (`[responses]` on), driven by
 * the official `openai` client against fake upstreams on loopback: a tool
 * loop chained with `previous_response_id` and with `item_reference` on an
 * Anthropic model, a conversation that fails over from OpenAI to Anthropic
 * and keeps its context, the read endpoints, another caller's ids, what
 * Redis holds, and Redis stopped.
 */
import OpenAI from "openai"
import { Redis } from "ioredis"
import { afterAll, describe, expect, it } from "vitest"
import { startOwnRedis } from "../fixtures/own-redis.ts"
import type { OwnRedis } from "../fixtures/own-redis.ts"
import { gatewayWithFakes } from "./harness.ts"
import { parsePrometheus, sampleOf } from "./prometheus.ts"
import { RESPONSES_WEATHER_TOOL } from "../fixtures/responses.ts"

let redis: OwnRedis | undefined

const { fakes, gateway } = gatewayWithFakes(
  { openai: { kind: "openai" }, anthropic: { kind: "anthropic" } },
  async (fakes) => {
    redis = await startOwnRedis()
    return {
      providers: {
        openai: { base_url: `${fakes.openai.url}/v1`, models: ["gpt-4o"], credential: "env::OPENAI_KEY" },
        anthropic: { base_url: fakes.anthropic.url, models: ["claude-e2e"], credential: "env::ANTHROPIC_KEY" }
      },
      targets: { native: { model: "gpt-4o" }, translated: { model: "claude-e2e" } },
      routes: {
        native_first: { endpoint: "chat", models: ["native-first"], strategy: "fallback", targets: ["native", "translated"], retry: { max_retries: 0, backoff_base_ms: 1 } }
      },
      // The cache itself stays off: the store takes its url and salt.
      cache: { enabled: false, url: redis.url, encrypt_salt: "responses-e2e-salt" },
      responses: { enabled: true, timeout_ms: 300, max_entry_size_bytes: 16384 },
      metrics: { enabled: true }
    }
  },
  { OPENAI_KEY: "sk-openai-state-0001", ANTHROPIC_KEY: "sk-ant-state-0002" }
)

afterAll(async () => {
  await redis?.kill()
})

/** Polls until `check` holds, at most 100 times 20 ms apart. */
const until = async (what: string, check: () => boolean) => {
  for (let tries = 0; tries < 100; tries++) {
    if (check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`never: ${what}`)
}

const clientFor = (callerKey: string) =>
  new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: { authorization: null, "x-gw-authorization": `Bearer ${callerKey}` } })

const weatherTool = RESPONSES_WEATHER_TOOL

type AnthropicMessage = { role: string; content: Array<Record<string, unknown>> }
const anthropicMessages = (index: number) => (fakes.anthropic.requests[index].json as { messages: Array<AnthropicMessage> }).messages

describe("previous_response_id on an Anthropic model", () => {
  it("a multi-step tool loop chains through the store; Anthropic gets the whole conversation each turn", async () => {
    const client = clientFor("gw-caller-loop-0001")
    const first = await client.responses.create({ model: "claude-e2e", input: "use tool for Paris", tools: [weatherTool] })
    expect((first as unknown as { store: boolean }).store).toBe(true)
    const call = first.output.find((item) => item.type === "function_call")
    if (call?.type !== "function_call") throw new Error("no function call")

    const second = await client.responses.create({
      model: "claude-e2e",
      previous_response_id: first.id,
      tools: [weatherTool],
      input: [{ type: "function_call_output", call_id: call.call_id, output: "18C and sunny" }]
    })
    expect(second.output_text).toBe("echo: 18C and sunny")
    expect(second.previous_response_id).toBe(first.id)
    expect(anthropicMessages(1)).toEqual([
      { role: "user", content: [{ type: "text", text: "use tool for Paris" }] },
      { role: "assistant", content: [expect.objectContaining({ type: "tool_use", id: call.call_id, name: "get_weather", input: { city: "Paris" } })] },
      { role: "user", content: [expect.objectContaining({ type: "tool_result", tool_use_id: call.call_id })] }
    ])

    const third = await client.responses.create({ model: "claude-e2e", previous_response_id: second.id, input: "and tomorrow?" })
    expect(third.output_text).toBe("echo: and tomorrow?")
    const sent = anthropicMessages(2)
    expect(sent).toHaveLength(5)
    expect(sent[3]).toEqual({ role: "assistant", content: [expect.objectContaining({ type: "text", text: "echo: 18C and sunny" })] })
    expect(sent[4]).toEqual({ role: "user", content: [{ type: "text", text: "and tomorrow?" }] })
  })

  it("streamed: a tool loop with parallel calls chains with previous_response_id and item_reference, each turn stored when its stream ends", async () => {
    const client = clientFor("gw-caller-stream-0001")
    const first = await client.responses.stream({ model: "claude-e2e", input: "use tool for Paris and Rome", tools: [weatherTool] }).finalResponse()
    const calls = first.output.filter((item) => item.type === "function_call")
    expect(calls.length).toBeGreaterThan(0)
    const outputs = calls.map((call) => ({ type: "function_call_output" as const, call_id: call.type === "function_call" ? call.call_id : "", output: "18C and sunny" }))

    const second = await client.responses.stream({ model: "claude-e2e", previous_response_id: first.id, tools: [weatherTool], input: outputs }).finalResponse()
    expect(second.output_text).toBe("echo: 18C and sunny")
    const sent = anthropicMessages(1)
    expect(sent[0]).toEqual({ role: "user", content: [{ type: "text", text: "use tool for Paris and Rome" }] })
    expect(sent[1].content.filter((part) => part.type === "tool_use")).toHaveLength(calls.length)

    // The AI SDK's way: earlier items by reference, no previous_response_id.
    const third = await client.responses.stream({
      model: "claude-e2e",
      tools: [weatherTool],
      input: [
        { role: "user", content: "use tool for Paris and Rome" },
        ...calls.map((call) => ({ type: "item_reference" as const, id: call.id! })),
        ...outputs,
        { type: "item_reference", id: second.output[0].id! },
        { role: "user", content: "thanks" }
      ]
    }).finalResponse()
    expect(third.output_text).toBe("echo: thanks")
    expect(anthropicMessages(2).map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant", "user"])
    expect((await client.responses.retrieve(third.id)).output_text).toBe("echo: thanks")
  })

  it("streamed events say store: true and the previous_response_id sent; the id the caller saw is the id stored", async () => {
    const client = clientFor("gw-caller-events-0001")
    const storedLines = () => gateway.requestLogs().filter((line) => line.responses_store === "stored").length
    const before = storedLines()
    const first = await client.responses.create({ model: "claude-e2e", input: "hello" })
    await until("the first turn's request line", () => storedLines() >= before + 1)
    const events = []
    for await (const event of await client.responses.create({ model: "claude-e2e", previous_response_id: first.id, input: "again", stream: true })) events.push(event)
    const created = events.find((event) => event.type === "response.created")
    const completed = events.find((event) => event.type === "response.completed")
    if (created?.type !== "response.created" || completed?.type !== "response.completed") throw new Error("no created or completed event")
    for (const event of [created, completed]) {
      expect((event.response as unknown as { store: boolean }).store).toBe(true)
      expect(event.response.previous_response_id).toBe(first.id)
    }
    expect(completed.response.id).toBe(created.response.id)
    await until("the streamed turn's request line", () => storedLines() >= before + 2)
    const read = await client.responses.retrieve(created.response.id)
    expect(read).toMatchObject({ id: created.response.id, store: true, previous_response_id: first.id })
    expect(read.output_text).toBe("echo: again")

    // store: false says so, and keeps nothing.
    const unstored = []
    for await (const event of await client.responses.create({ model: "claude-e2e", input: "forget", stream: true, store: false })) unstored.push(event)
    const done = unstored.find((event) => event.type === "response.completed")
    if (done?.type !== "response.completed") throw new Error("no completed event")
    expect((done.response as unknown as { store: boolean }).store).toBe(false)
    await expect(client.responses.retrieve(done.response.id)).rejects.toMatchObject({ status: 404 })
  })

  it("thinking round-trips: a signed thinking block comes back to Anthropic with its signature on the next turn", async () => {
    const client = clientFor("gw-caller-thinking-0001")
    fakes.anthropic.script({
      kind: "json",
      body: {
        id: "msg_thinking_turn_1",
        type: "message",
        role: "assistant",
        model: "claude-e2e",
        content: [
          { type: "thinking", thinking: "The user wants Paris weather.", signature: "sig-thinking-0001" },
          { type: "tool_use", id: "toolu_think_1", name: "get_weather", input: { city: "Paris" } }
        ],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 20 }
      }
    })
    const first = await client.responses.create({ model: "claude-e2e", input: "weather in Paris?", tools: [weatherTool] })
    expect(first.output.map((item) => item.type)).toEqual(["reasoning", "function_call"])
    const second = await client.responses.create({
      model: "claude-e2e",
      previous_response_id: first.id,
      tools: [weatherTool],
      input: [{ type: "function_call_output", call_id: "toolu_think_1", output: "18C" }]
    })
    expect(second.output_text).toBe("echo: 18C")
    expect(anthropicMessages(1)[1].content).toEqual([
      { type: "thinking", thinking: "The user wants Paris weather.", signature: "sig-thinking-0001" },
      expect.objectContaining({ type: "tool_use", id: "toolu_think_1" })
    ])
  })

  it("item_reference inputs (what the AI SDK sends with store on) resolve to the stored items", async () => {
    const client = clientFor("gw-caller-refs-0001")
    const first = await client.responses.create({ model: "claude-e2e", input: "use tool for Paris", tools: [weatherTool] })
    const call = first.output.find((item) => item.type === "function_call")
    if (call?.type !== "function_call") throw new Error("no function call")
    const second = await client.responses.create({
      model: "claude-e2e",
      tools: [weatherTool],
      input: [
        { role: "user", content: "use tool for Paris" },
        { type: "item_reference", id: call.id! },
        { type: "function_call_output", call_id: call.call_id, output: "18C and sunny" }
      ]
    })
    expect(second.output_text).toBe("echo: 18C and sunny")
    expect(anthropicMessages(1)[1]).toEqual({ role: "assistant", content: [expect.objectContaining({ type: "tool_use", id: call.call_id })] })
  })

  it("an unknown id, or another caller's, is the API's 400 with param; nothing reaches the provider", async () => {
    const owner = clientFor("gw-caller-owner-0001")
    const first = await owner.responses.create({ model: "claude-e2e", input: "my secret plan" })
    fakes.anthropic.reset()
    for (const [client, id] of [[clientFor("gw-caller-other-0002"), first.id], [owner, "resp_never_made"]] as const) {
      const error = await client.responses.create({ model: "claude-e2e", previous_response_id: id, input: "go on" }).catch((e: unknown) => e)
      expect(error).toMatchObject({ status: 400, error: { param: "previous_response_id" } })
      expect((error as Error).message).toContain(`Previous response with id '${id}' not found.`)
    }
    const badRef = await owner.responses.create({ model: "claude-e2e", input: [{ type: "item_reference", id: "msg_nowhere" }] }).catch((e: unknown) => e)
    expect(badRef).toMatchObject({ status: 400, error: { param: "input[0].id" } })
    expect(fakes.anthropic.requests).toHaveLength(0)
    await expect(clientFor("gw-caller-other-0002").responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 })
  })

  it("store: false stores nothing", async () => {
    const client = clientFor("gw-caller-nostore-0001")
    const first = await client.responses.create({ model: "claude-e2e", input: "forget me", store: false })
    await expect(client.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 })
  })
})

describe("a conversation that outgrows the store", () => {
  it("is a 400 saying so, naming previous_response_id; nothing reaches the provider", async () => {
    const client = clientFor("gw-caller-big-0001")
    let previous = (await client.responses.create({ model: "claude-e2e", input: "x".repeat(3000) })).id
    // Each turn carries the conversation so far; a few more turns pass max_entry_size_bytes (16 KiB here).
    let refused: unknown
    for (let turn = 0; turn < 10 && refused === undefined; turn++) {
      await client.responses.create({ model: "claude-e2e", previous_response_id: previous, input: "y".repeat(3000) }).then(
        (response) => {
          previous = response.id
        },
        (error: unknown) => {
          refused = error
        }
      )
    }
    expect(refused).toMatchObject({ status: 400, error: { param: "previous_response_id" } })
    expect((refused as Error).message).toContain("outgrew the gateway's Responses store (responses.max_entry_size_bytes)")
  })
})

describe("a conversation that moves between providers", () => {
  it("turn one answered by OpenAI, turn two failed over to Anthropic: Anthropic receives turn one", async () => {
    const client = clientFor("gw-caller-failover-0001")
    const first = await client.responses.create({ model: "native-first", input: "remember the number 7" })
    expect(fakes.openai.requests).toHaveLength(1)
    fakes.openai.script({ kind: "error", status: 500 })
    const second = await client.responses.create({ model: "native-first", previous_response_id: first.id, input: "what number?" }).withResponse()
    expect(second.response.headers.get("x-gw-upstream-provider")).toBe("anthropic")
    expect(second.data.output_text).toBe("echo: what number?")
    expect(anthropicMessages(0)).toEqual([
      { role: "user", content: [{ type: "text", text: "remember the number 7" }] },
      { role: "assistant", content: [expect.objectContaining({ type: "text", text: first.output_text })] },
      { role: "user", content: [{ type: "text", text: "what number?" }] }
    ])
    // What OpenAI got for turn two was the whole conversation too, without an id it could not know.
    expect((fakes.openai.requests[1].json as Record<string, unknown>).previous_response_id).toBeUndefined()
  })
})

describe("a native provider's own ids (unknown to the store for every caller)", () => {
  /** A response made at the OpenAI fake directly: its id is OpenAI's own, never seen by the gateway. */
  const madeAtOpenAi = async () =>
    (await new OpenAI({ baseURL: `${fakes.openai.url}/v1`, apiKey: "sk-direct", maxRetries: 0 }).responses.create({ model: "gpt-4o", input: "made at OpenAI" })).id

  it("previous_response_id goes as it is to a native Responses provider, and is the API's 400 where it must be translated", async () => {
    const own = await madeAtOpenAi()
    fakes.openai.reset()
    const client = clientFor("gw-caller-native-0001")
    const chained = await client.responses.create({ model: "gpt-4o", previous_response_id: own, input: "go on" })
    expect(chained.output_text).toBe("echo: go on")
    expect(fakes.openai.requests[0].json).toMatchObject({ previous_response_id: own, input: "go on" })
    // Its conversation is OpenAI's: the gateway does not keep a partial copy of it (a later turn goes to OpenAI too).
    expect((await client.responses.create({ model: "gpt-4o", previous_response_id: chained.id, input: "and on" })).output_text).toBe("echo: and on")
    expect(fakes.openai.requests[1].json).toMatchObject({ previous_response_id: chained.id })

    const translated = await client.responses.create({ model: "claude-e2e", previous_response_id: own, input: "go on" }).catch((e: unknown) => e)
    expect(translated).toMatchObject({ status: 400, error: { param: "previous_response_id" } })
    expect((translated as Error).message).toContain(`Previous response with id '${own}' not found.`)
    expect(fakes.anthropic.requests).toHaveLength(0)
  })

  it("an id the store kept for another caller is never forwarded, even to the provider that made it", async () => {
    const owner = clientFor("gw-caller-native-owner-0001")
    const first = await owner.responses.create({ model: "gpt-4o", input: "owner's secret" })
    fakes.openai.reset()
    const other = clientFor("gw-caller-native-other-0002")
    const error = await other.responses.create({ model: "gpt-4o", previous_response_id: first.id, input: "tell me" }).catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 400, error: { param: "previous_response_id" } })
    await expect(other.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 })
    await expect(other.responses.delete(first.id)).rejects.toMatchObject({ status: 404 })
    expect(fakes.openai.requests).toHaveLength(0)
  })

  it("GET, input_items and DELETE of an id the store never kept are forwarded to the native provider", async () => {
    const id = "resp_openai_own_0001"
    const object = { id, object: "response", created_at: 1_700_000_000, status: "completed", model: "gpt-4o", output: [] }
    fakes.openai.script({ kind: "json", method: "GET", path: `/v1/responses/${id}/input_items`, body: { object: "list", data: [], first_id: null, last_id: null, has_more: false } })
    fakes.openai.script({ kind: "json", method: "GET", path: `/v1/responses/${id}`, body: object })
    fakes.openai.script({ kind: "json", method: "DELETE", path: `/v1/responses/${id}`, body: { id, object: "response", deleted: true } })
    const client = clientFor("gw-caller-native-read-0001")
    await expect(client.responses.inputItems.list(id, { limit: 5 })).resolves.toMatchObject({ data: [] })
    const read = await client.responses.retrieve(id).withResponse()
    expect(read.data).toMatchObject({ id, model: "gpt-4o" })
    expect(read.response.headers.get("x-gw-upstream-provider")).toBe("openai")
    await expect(client.responses.delete(id)).resolves.toMatchObject({ id, deleted: true })
    expect(fakes.openai.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      `GET /v1/responses/${id}/input_items?limit=5`,
      `GET /v1/responses/${id}`,
      `DELETE /v1/responses/${id}`
    ])
    // With the gateway's credential, never the caller's gateway key.
    expect(fakes.openai.requests.map((request) => request.headers.authorization)).toEqual(Array(3).fill("Bearer sk-openai-state-0001"))
  })
})

describe("the read endpoints", () => {
  it("retrieve, input_items (paginated) and delete, in the API's shapes", async () => {
    const client = clientFor("gw-caller-read-0001")
    const response = await client.responses.create({
      model: "claude-e2e",
      instructions: "Be brief.",
      input: [
        { role: "user", content: "one" },
        { role: "assistant", content: "two" },
        { role: "user", content: "three" }
      ]
    })
    const read = await client.responses.retrieve(response.id)
    expect(read).toMatchObject({ id: response.id, object: "response", status: "completed", model: response.model, instructions: "Be brief." })
    expect(read.output_text).toBe("echo: three")

    const page = await client.responses.inputItems.list(response.id, { limit: 2 })
    const textOf = (item: (typeof page.data)[number]) => (item.type === "message" ? item.content.map((part) => ("text" in part ? part.text : "")).join("") : item.type)
    expect(page.data.map(textOf)).toEqual(["three", "two"])
    expect(page.data[0]).toMatchObject({ type: "message", role: "user", content: [{ type: "input_text", text: "three" }] })
    expect(page.has_more).toBe(true)
    const all = []
    for await (const item of client.responses.inputItems.list(response.id, { limit: 1, order: "asc" })) all.push(item)
    expect(all.map(textOf)).toEqual(["one", "two", "three"])

    await expect(client.responses.delete(response.id)).resolves.toMatchObject({ id: response.id, object: "response", deleted: true })
    await expect(client.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 })
    await expect(client.responses.delete(response.id)).rejects.toMatchObject({ status: 404 })
  })

  it("what Redis holds is ciphertext under opaque keys", async () => {
    const client = clientFor("gw-caller-cipher-0001")
    const response = await client.responses.create({ model: "claude-e2e", input: "the launch code is tangerine" })
    const admin = new Redis(redis!.url)
    try {
      const names = await admin.keys("gw:responses:v1:*")
      expect(names.length).toBeGreaterThan(0)
      for (const name of names) {
        expect(name).not.toContain(response.id)
        const value = (await admin.getBuffer(name))!
        for (const clear of ["tangerine", "launch", response.id, "claude-e2e", "gw-caller-cipher"]) expect(value.includes(clear)).toBe(false)
      }
    } finally {
      admin.disconnect()
    }
  })
})

describe("Redis round trips per turn (MONITOR)", () => {
  it("a chained turn costs one MGET before the provider and one MULTI of SETs on the answer's path; a first turn only the MULTI", async () => {
    const client = clientFor("gw-caller-monitor-0001")
    const first = await client.responses.create({ model: "claude-e2e", input: "warm the pool" })
    const admin = new Redis(redis!.url)
    const monitor = await admin.monitor()
    const commands: Array<string> = []
    monitor.on("monitor", (_time: string, args: Array<string>) => commands.push(String(args[0]).toLowerCase()))
    try {
      const second = await client.responses.create({ model: "claude-e2e", previous_response_id: first.id, input: "count my commands" })
      await until("the turn's writes", () => commands.includes("exec"))
      const summary = (list: Array<string>) => list.filter((command, index) => command !== "set" || list[index - 1] !== "set")
      // MULTI, SET × (response, its output item, their claims), EXEC: one pipelined round trip.
      expect(summary(commands)).toEqual(["mget", "multi", "set", "exec"])
      expect(commands.filter((command) => command === "set")).toHaveLength(4)

      commands.length = 0
      await client.responses.stream({ model: "claude-e2e", previous_response_id: second.id, input: "streamed" }).finalResponse()
      await until("the streamed turn's writes", () => commands.includes("exec"))
      expect(summary(commands)).toEqual(["mget", "multi", "set", "exec"])

      commands.length = 0
      await client.responses.create({ model: "claude-e2e", input: "a first turn" })
      await until("the first turn's writes", () => commands.includes("exec"))
      expect(summary(commands)).toEqual(["multi", "set", "exec"])
    } finally {
      monitor.disconnect()
      admin.disconnect()
    }
  })
})

describe("Redis stopped mid-conversation", () => {
  it("a turn that needs state is a 503 INFRA_UNAVAILABLE; a turn that only writes is answered and the failed write logged; both counted", async () => {
    const storeErrors = async (op: string) =>
      sampleOf(parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text()), "gateway_responses_store_errors_total", { op })
    const [readsBefore, writesBefore] = [await storeErrors("read"), await storeErrors("write")]
    const client = clientFor("gw-caller-outage-0001")
    const first = await client.responses.create({ model: "claude-e2e", input: "before the outage" })
    await until("the request line", () => gateway.requestLogs().some((line) => line.responses_store === "stored"))
    await redis!.kill()
    try {
      const error = await client.responses.create({ model: "claude-e2e", previous_response_id: first.id, input: "during" }).catch((e: unknown) => e)
      expect(error).toMatchObject({ status: 503 })
      expect(JSON.stringify((error as { error: unknown }).error)).toContain("INFRA_UNAVAILABLE")
      const fresh = await client.responses.create({ model: "claude-e2e", input: "a fresh start" })
      expect(fresh.output_text).toBe("echo: a fresh start")
      expect(gateway.logs.some((line) => line.msg === "responses store unavailable" && line.kind === "store failed")).toBe(true)
      await until("the request line", () => gateway.requestLogs().some((line) => line.responses_store === "unstored"))
      expect(JSON.stringify(gateway.logs)).not.toContain("gw-caller-outage")
      expect(await storeErrors("read")).toBe(readsBefore + 1)
      expect(await storeErrors("write")).toBe(writesBefore + 1)
    } finally {
      await redis!.restart()
    }
  })
})
