#!/usr/bin/env node
/**
 * Composition root and CLI.
 *
 *   gateway [serve] [--config PATH | PATH] [--port N] [--host H]   run the gateway (default)
 *   gateway check-config [--config PATH | PATH]   validate the configuration and print it, secrets redacted
 *   gateway snapshot …                tenant snapshots: keygen, seal, publish (src/tenancy/cli.ts)
 *   gateway batch …                   a file of requests through the gateway (src/batch/cli.ts)
 *   gateway --version | --help
 *
 * Exit codes: 0 done, 1 failed (configuration, start), 2 usage error. A usage
 * error never starts a server.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Exit, Layer, Result } from "effect"
import { parseArgs } from "node:util"
import type { ParseArgsOptionsConfig } from "node:util"
import { configPath, loadSettings, redactedView } from "./config/index.ts"
import type { ConfigError, GatewaySettings } from "./config/index.ts"
import { keptLayer, serveReloading } from "./gateway.ts"
import { StartError } from "./http/server.ts"
import { JsonLog, logFormatFor } from "./infra/log.ts"
import { isClusterWorker, superviseWorkers, workerCount, workerNumber } from "./workers.ts"

const SERVE_USAGE = `usage: gateway [serve] [--config PATH | PATH] [--port N] [--host H]
  Runs the gateway. Configuration: PATH, $GATEWAY_CONFIG or config/gateway.toml.
  --port N and --host H replace [server] port and host of the file (0: any free port).`
const CHECK_CONFIG_USAGE = `usage: gateway check-config [--config PATH | PATH]
  Validates the configuration and prints it with secrets redacted; exit 1 when it is invalid.`

const USAGE = `usage:
  gateway [serve] [--config PATH | PATH] [--port N] [--host H]   run the gateway (gateway serve --help)
  gateway check-config [--config PATH | PATH]   validate the configuration and print it, secrets redacted
  gateway snapshot keygen|seal|publish …  tenant snapshots (gateway snapshot --help)
  gateway batch INPUT --out OUTPUT …       run a file of requests (gateway batch --help)
  gateway --version                 print the version`

/** A command line that cannot be run: exit 2 with the message and the usage, and start nothing. */
const usageError = (message: string, usage: string): void => {
  process.stderr.write(`${message}\n${usage}\n`)
  process.exitCode = 2
}

const isHelp = (args: ReadonlyArray<string>): boolean => args.includes("--help") || args.includes("-h")

/** A command's options and positionals, or what is wrong with them (an unknown option, a missing value). */
const parseOptions = <const Options extends ParseArgsOptionsConfig>(args: ReadonlyArray<string>, options: Options) => {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true })
  } catch (cause) {
    // Node's message goes on about positionals starting with "-"; its first sentence says it all.
    return (cause as Error).message.split(". ")[0]
  }
}

/** A command's `--config PATH` and at most one PATH; `--config` and PATH together are a usage error. */
const configArgument = (config: string | undefined, positionals: ReadonlyArray<string>): { readonly path: string | undefined } | string => {
  if (positionals.length > 1) return `unexpected argument "${positionals[1]}"`
  if (positionals.length === 1 && config !== undefined) return `both --config and "${positionals[0]}": give one configuration file`
  return { path: config ?? positionals[0] }
}

const checkConfig = (path: string | undefined): number => {
  const source = configPath(path, process.env)
  const result = loadSettings(source, process.env)
  if (Result.isFailure(result)) {
    process.stderr.write(`${result.failure.message}\n`)
    return 1
  }
  for (const warning of result.success.warnings) process.stderr.write(`warning: ${warning}\n`)
  process.stdout.write(`# ${source}: valid\n${JSON.stringify(redactedView(result.success), null, 2)}\n`)
  return 0
}

/** `--port` and `--host`, when given, in place of the file's `[server] port` and `host`. */
interface ServerFlags {
  readonly port?: number
  readonly host?: string
}

/** The configuration file as `serve` reads it, at start and on every reload: `--port` and `--host` applied. */
const loadServed = (path: string | undefined, flags: ServerFlags) => (): Result.Result<GatewaySettings, ConfigError> =>
  Result.map(loadSettings(configPath(path, process.env), process.env), (loaded) => ({
    ...loaded,
    file: { ...loaded.file, server: { ...loaded.file.server, ...flags } }
  }))

const serve = (path: string | undefined, flags: ServerFlags): void => {
  const load = loadServed(path, flags)
  const loaded = load()
  if (Result.isFailure(loaded)) {
    process.stderr.write(`${loaded.failure.message}\n`)
    process.exitCode = 1
    return
  }
  const settings = loaded.success
  const { log_level: level, log_format } = settings.file.telemetry
  const format = logFormatFor(log_format, process.stdout, process.env)
  if (!isClusterWorker() && workerCount(settings) > 1) {
    void superviseWorkers(settings, new JsonLog(level, process.stdout, { format }))
    return
  }
  const log = new JsonLog(level, process.stdout, { worker: workerNumber(), format })
  Layer.launch(Layer.effectDiscard(serveReloading(settings, { load })).pipe(Layer.provide(keptLayer(settings, log)))).pipe(
    NodeRuntime.runMain({
      disableErrorReporting: true,
      // A signal is the normal way to stop: graceful shutdown exits 0.
      teardown: (exit, onExit) => {
        log.flush()
        if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return onExit(0)
        const error = Cause.squash(exit.cause)
        process.stderr.write(`gateway failed: ${error instanceof StartError ? error.message : Cause.pretty(exit.cause)}\n`)
        onExit(1)
      }
    })
  )
}

const serveCommand = (args: ReadonlyArray<string>, usage: string): void => {
  if (isHelp(args)) {
    process.stdout.write(`${SERVE_USAGE}\n`)
    return
  }
  const parsed = parseOptions(args, { config: { type: "string" }, port: { type: "string" }, host: { type: "string" } })
  if (typeof parsed === "string") return usageError(parsed, usage)
  const { values, positionals } = parsed
  const config = configArgument(values.config, positionals)
  if (typeof config === "string") return usageError(config, usage)
  const flags: { port?: number; host?: string } = {}
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535) {
      return usageError(`--port: expected a port number from 0 to 65535, got ${JSON.stringify(values.port)}`, usage)
    }
    flags.port = Number(values.port)
  }
  if (values.host !== undefined) {
    if (values.host.trim() === "") return usageError("--host: expected a host name or address", usage)
    flags.host = values.host
  }
  serve(config.path, flags)
}

const checkConfigCommand = (args: ReadonlyArray<string>): void => {
  if (isHelp(args)) {
    process.stdout.write(`${CHECK_CONFIG_USAGE}\n`)
    return
  }
  const parsed = parseOptions(args, { config: { type: "string" } })
  if (typeof parsed === "string") return usageError(parsed, CHECK_CONFIG_USAGE)
  const config = configArgument(parsed.values.config, parsed.positionals)
  if (typeof config === "string") return usageError(config, CHECK_CONFIG_USAGE)
  process.exitCode = checkConfig(config.path)
}

const main = (argv: ReadonlyArray<string>): void => {
  const [command, ...rest] = argv
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (command === "--version") {
    // Loaded on demand: the version is in the bundle, never read from a path next to it.
    void import("../package.json", { with: { type: "json" } }).then(({ default: manifest }) => process.stdout.write(`${manifest.version}\n`))
    return
  }
  if (command === "check-config") return checkConfigCommand(rest)
  if (command === "batch") {
    // Loaded on demand: `serve` never pays for the commands it does not run.
    void import("./batch/cli.ts").then(({ runBatchCli }) => runBatchCli(rest)).then((code) => (process.exitCode = code))
    return
  }
  if (command === "snapshot") {
    void import("./tenancy/cli.ts").then(({ runSnapshotCli }) => runSnapshotCli(rest)).then((code) => (process.exitCode = code))
    return
  }
  if (command === "serve") return serveCommand(rest, SERVE_USAGE)
  // No command, or options only: `gateway --config PATH`, `gateway --port 8080`.
  if (command === undefined || command.startsWith("-")) return serveCommand(argv, USAGE)
  usageError(`unknown command "${command}"`, USAGE)
}

main(process.argv.slice(2))
