/**
 * `gateway snapshot …`: the operator's side of multi-tenant mode.
 *
 *   keygen [--out DIR]                       writes snapshot-x25519.key (0600) and snapshot-x25519.pub, base64
 *   seal --public-key K SNAPSHOT.json        validates, then prints the sealed envelope
 *   publish --redis URL --project P --env E [--public-key K] SNAPSHOT.json
 *                                            validates, (seals,) SET gw:routing:P:E, SADD gw:routing:P:envs,
 *                                            PUBLISH {projectId, envSlug, version} on gw:routing:updates
 *
 * K is a public key file or the base64 key itself. Validation uses the rules
 * of the configuration file and refuses with the messages of `check-config`.
 * Nothing here prints a snapshot's content, a key or a Redis password.
 */
import { Result } from "effect"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import type { KeyObject } from "node:crypto"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { connectRedis, isCluster } from "../infra/redis-client.ts"
import { snapshotFromDocument } from "../config/index.ts"
import type { ValidatedSnapshot } from "../config/index.ts"
import { isRedisUrl, redisEndpoint, redisLogTarget } from "../config/index.ts"
import { parseJson } from "./open-snapshot.ts"
import { generateKeyPair, isEnvelope, keyBytes, publicKeyFromBytes, seal } from "./sealing.ts"
import { environmentsKey, tenantId, UPDATES_CHANNEL } from "./selection.ts"

const SNAPSHOT_USAGE = `usage:
  gateway snapshot keygen [--out DIR]
  gateway snapshot seal --public-key K SNAPSHOT.json
  gateway snapshot publish --redis URL --project P --env E [--public-key K] SNAPSHOT.json
K: a public key file (from keygen) or the base64 public key itself.`

const PRIVATE_KEY_FILE = "snapshot-x25519.key"
const PUBLIC_KEY_FILE = "snapshot-x25519.pub"
const REDIS_TIMEOUT_MS = 5_000

class CliFailure extends Error {
  readonly code: number
  constructor(message: string, code = 1) {
    super(message)
    this.code = code
  }
}

const readPublicKey = (value: string): KeyObject => {
  const raw = existsSync(value) ? keyBytes(readFileSync(value)) : keyBytes(Buffer.from(value))
  if (raw === undefined) throw new CliFailure(`--public-key: expected a file holding a 32-byte X25519 public key (raw or base64), or the base64 key itself`)
  try {
    return publicKeyFromBytes(raw)
  } catch {
    throw new CliFailure(`--public-key: not a usable X25519 public key`)
  }
}

/** The snapshot file, validated like the configuration file; warnings go to stderr. */
const readSnapshot = (path: string): { readonly text: string; readonly snapshot: ValidatedSnapshot } => {
  let text: string
  try {
    text = readFileSync(path, "utf8")
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code
    throw new CliFailure(`cannot read snapshot ${path}: ${code === "ENOENT" ? "file not found" : code ?? "error"}`)
  }
  const document = Result.getOrThrowWith(parseJson(text), (reason) => new CliFailure(`invalid snapshot ${path}: ${reason}`))
  if (isEnvelope(document)) {
    throw new CliFailure(`${path} is already sealed; pass the plaintext snapshot (it is validated before it is sealed)`)
  }
  const snapshot = Result.getOrThrowWith(snapshotFromDocument(document, path), (refusal) => new CliFailure(refusal.error.message))
  for (const warning of snapshot.settings.warnings) process.stderr.write(`warning: ${warning}\n`)
  return { text, snapshot }
}

const keygen = (out: string): void => {
  mkdirSync(out, { recursive: true })
  const privatePath = join(out, PRIVATE_KEY_FILE)
  const publicPath = join(out, PUBLIC_KEY_FILE)
  for (const path of [privatePath, publicPath]) {
    if (existsSync(path)) throw new CliFailure(`${path} exists; refusing to overwrite a key`)
  }
  const pair = generateKeyPair()
  // "wx": never replace a file that appeared meanwhile; 0600 from creation, never readable by others.
  writeFileSync(privatePath, `${pair.privateKey.toString("base64")}\n`, { mode: 0o600, flag: "wx" })
  writeFileSync(publicPath, `${pair.publicKey.toString("base64")}\n`, { mode: 0o644, flag: "wx" })
  process.stdout.write(
    `private key: ${privatePath} (mode 0600; the gateway's tenant_routing.private_key_path)\n` +
      `public key:  ${publicPath} (for seal and publish --public-key)\n`
  )
}

const publish = async (options: { redis: string; project: string; env: string; publicKey?: string | undefined }, path: string) => {
  if (!isRedisUrl(options.redis)) throw new CliFailure(`--redis: expected a redis://, rediss:// or redis+cluster:// URL`)
  const tenant = tenantId(options.project, options.env)
  if (tenant._tag === "Failure") throw new CliFailure(tenant.failure.message.replace("x-gw-project-id", "--project").replace("x-gw-environment", "--env"))
  const { key, projectId, envSlug } = tenant.success
  const recipient = options.publicKey === undefined ? undefined : readPublicKey(options.publicKey)
  const { text, snapshot } = readSnapshot(path)
  if (recipient === undefined) {
    process.stderr.write("warning: publishing a plaintext snapshot (development only); a gateway with tenant_routing.private_key_path refuses it\n")
  }
  const value = recipient === undefined ? text : JSON.stringify(seal(text, recipient))
  const { target, scrub } = redisLogTarget(options.redis)
  const client = connectRedis(redisEndpoint(options.redis), {
    lazyConnect: true,
    connectTimeout: REDIS_TIMEOUT_MS,
    commandTimeout: REDIS_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    // A socket that never connected otherwise holds the process for ioredis's default 2 s.
    disconnectTimeout: 100
  })
  // ioredis rejects a failed connect with "Connection is closed."; the cause arrives as an event.
  let connectionError: string | undefined
  client.on("error", (error: Error) => (connectionError = error.message))
  try {
    await client.connect()
    await client.set(key, value)
    await client.sadd(environmentsKey(projectId), envSlug)
    const receivers = await client.publish(UPDATES_CHANNEL, JSON.stringify({ projectId, envSlug, version: snapshot.version }))
    process.stdout.write(
      `published ${key} version ${snapshot.version} (${recipient === undefined ? "plaintext" : "sealed"}) to ${target}; ` +
        `${receivers} subscriber${receivers === 1 ? "" : "s"} notified${isCluster(client) ? " on the node it was sent to (a cluster passes it to every node)" : ""}\n`
    )
  } catch (cause) {
    throw new CliFailure(`publish to ${target} failed: ${scrub(connectionError ?? (cause as Error).message ?? String(cause))}`)
  } finally {
    client.disconnect()
  }
}

const parse = (args: ReadonlyArray<string>) =>
  parseArgs({
    args: [...args],
    allowPositionals: true,
    strict: true,
    options: {
      out: { type: "string" },
      "public-key": { type: "string" },
      redis: { type: "string" },
      project: { type: "string" },
      env: { type: "string" }
    }
  })

const required = (value: string | undefined, flag: string): string => {
  if (value === undefined || value === "") throw new CliFailure(`${flag} is required\n${SNAPSHOT_USAGE}`, 2)
  return value
}

const onePath = (positionals: ReadonlyArray<string>): string => {
  if (positionals.length !== 1) throw new CliFailure(`expected one snapshot file\n${SNAPSHOT_USAGE}`, 2)
  return positionals[0]
}

/** Runs `gateway snapshot <args>`; resolves with the exit code. */
export const runSnapshotCli = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [command, ...args] = argv
  // `gateway snapshot seal --help` too: help is asked for, not an unknown option.
  if (command === "help" || argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${SNAPSHOT_USAGE}\n`)
    return 0
  }
  try {
    let parsed: ReturnType<typeof parse>
    try {
      parsed = parse(args)
    } catch (cause) {
      throw new CliFailure(`${(cause as Error).message}\n${SNAPSHOT_USAGE}`, 2)
    }
    const { values, positionals } = parsed
    switch (command) {
      case "keygen":
        if (positionals.length > 0) throw new CliFailure(SNAPSHOT_USAGE, 2)
        keygen(values.out ?? ".")
        return 0
      case "seal": {
        const recipient = readPublicKey(required(values["public-key"], "--public-key"))
        const { text } = readSnapshot(onePath(positionals))
        process.stdout.write(`${JSON.stringify(seal(text, recipient))}\n`)
        return 0
      }
      case "publish":
        await publish({
          redis: required(values.redis, "--redis"),
          project: required(values.project, "--project"),
          env: required(values.env, "--env"),
          publicKey: values["public-key"]
        }, onePath(positionals))
        return 0
      default:
        throw new CliFailure(command === undefined ? SNAPSHOT_USAGE : `unknown snapshot command "${command}"\n${SNAPSHOT_USAGE}`, 2)
    }
  } catch (cause) {
    if (!(cause instanceof CliFailure)) throw cause
    process.stderr.write(`${cause.message}\n`)
    return cause.code
  }
}
