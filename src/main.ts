#!/usr/bin/env node
/**
 * Composition root and CLI.
 *
 *   gateway [serve] [[--config] PATH]   run the gateway (default)
 *   gateway check-config [PATH]       validate the configuration and print it, secrets redacted
 *   gateway snapshot …                tenant snapshots: keygen, seal, publish (src/tenancy/cli.ts)
 *   gateway batch …                   a file of requests through the gateway (src/batch/cli.ts)
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Exit, Layer } from "effect"
import { configPath, loadSettings, redactedView } from "./config/index.ts"
import { liveLayer, serveGateway } from "./gateway.ts"
import { StartError } from "./http/server.ts"
import { JsonLog } from "./infra/log.ts"
import { isClusterWorker, superviseWorkers, workerCount, workerNumber } from "./workers.ts"

const USAGE = `usage:
  gateway [serve] [[--config] PATH] run the gateway (config: PATH, $GATEWAY_CONFIG or config/gateway.toml)
  gateway check-config [PATH]       validate the configuration and print it with secrets redacted
  gateway snapshot keygen|seal|publish …  tenant snapshots (gateway snapshot --help)
  gateway batch INPUT --out OUTPUT …       run a file of requests (gateway batch --help)`

const checkConfig = (path: string | undefined): number => {
  const source = configPath(path, process.env)
  const result = loadSettings(source, process.env)
  if (!result.ok) {
    process.stderr.write(`${result.error.message}\n`)
    return 1
  }
  for (const warning of result.settings.warnings) process.stderr.write(`warning: ${warning}\n`)
  process.stdout.write(`# ${source}: valid\n${JSON.stringify(redactedView(result.settings), null, 2)}\n`)
  return 0
}

const serve = (path: string | undefined): void => {
  const result = loadSettings(configPath(path, process.env), process.env)
  if (!result.ok) {
    process.stderr.write(`${result.error.message}\n`)
    process.exitCode = 1
    return
  }
  const level = result.settings.file.telemetry.log_level
  if (!isClusterWorker() && workerCount(result.settings) > 1) {
    void superviseWorkers(result.settings, new JsonLog(level))
    return
  }
  const log = new JsonLog(level, process.stdout, { worker: workerNumber() })
  Layer.launch(Layer.effectDiscard(serveGateway).pipe(Layer.provide(liveLayer(result.settings, log)))).pipe(
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

const main = (argv: ReadonlyArray<string>): void => {
  const [command, ...rest] = argv
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (command === "check-config") {
    process.exitCode = checkConfig(rest[0])
    return
  }
  if (command === "batch") {
    // Loaded on demand: `serve` never pays for the commands it does not run.
    void import("./batch/cli.ts").then(({ runBatchCli }) => runBatchCli(rest)).then((code) => (process.exitCode = code))
    return
  }
  if (command === "snapshot") {
    void import("./tenancy/cli.ts").then(({ runSnapshotCli }) => runSnapshotCli(rest)).then((code) => (process.exitCode = code))
    return
  }
  if (command === undefined || command === "serve" || command === "--config") {
    const args = command === "--config" ? argv : rest
    const flag = args.indexOf("--config")
    // `serve --config PATH` or `serve PATH`.
    serve(flag === -1 ? args.find((arg) => !arg.startsWith("-")) : args[flag + 1])
    return
  }
  process.stderr.write(`unknown command "${command}"\n${USAGE}\n`)
  process.exitCode = 2
}

main(process.argv.slice(2))
