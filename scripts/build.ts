/**
 * `npm run build`: the production bundle `npm start` runs. One ESM bundle of
 * src/main.ts and its dependencies, tree-shaken (only the parts of Effect,
 * undici, OpenTelemetry… the gateway uses are loaded), with code split at the
 * dynamic imports so a stage that is off (telemetry, Redis, the batch and
 * snapshot commands) is never loaded. The source stays the source of truth:
 * tests run it directly.
 *
 * Gateways may start from one checkout while another builds (two instances, a
 * restart that overlaps the old one), so a build never changes files a
 * gateway may be loading: each build goes to `dist/builds/<content hash>/`,
 * written under a temporary name and renamed into place, and
 * `dist/gateway.mjs` is a symbolic link to the current one, switched with one
 * rename. Node loads the bundle from the link's target, so a gateway keeps
 * the build it started with. An unchanged source rebuilds to the same
 * directory and writes nothing.
 */
import { build } from "esbuild"
import type { Plugin } from "esbuild"
import { createHash, randomUUID } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs"
import { constants as http2Constants } from "node:http2"
import { dirname, join, relative } from "node:path"

/**
 * undici's HTTP/2 client requires `node:http2` (and, through it, `node:tls`)
 * when it loads, for a protocol the gateway does not speak to upstreams by
 * default: ~7 MiB of resident memory in every gateway whose upstreams are
 * plain HTTP (a local model server), ~1 MiB where they are HTTPS. This loads
 * it on the first HTTP/2 connection instead; the constants undici reads as it
 * loads are Node's own, written in at build time. The build fails if undici's
 * code no longer has the line this replaces.
 */
const lazyHttp2: Plugin = {
  name: "lazy-http2",
  setup(build) {
    build.onLoad({ filter: /undici[\\/]lib[\\/]dispatcher[\\/]client-h2\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8")
      const eager = "http2 = require('node:http2')"
      if (!source.includes(eager)) throw new Error(`${args.path} no longer has \`${eager}\`: update the lazy-http2 plugin of scripts/build.ts`)
      const lazy = `http2 = { constants: ${JSON.stringify(http2Constants)}, connect: (...args) => require('node:http2').connect(...args) }`
      return { contents: source.replace(eager, lazy), loader: "js" }
    })
  }
}

/**
 * Effect's fiber makes a `node:async_hooks` `AsyncResource` every time it
 * waits (a callback, a sleep) and resumes inside it, so that an
 * `AsyncLocalStorage` value set before the fiber started is seen after the
 * wait: a few objects and an async-id push and pop per wait, several waits per
 * request. Nothing the gateway's server runs reads an `AsyncLocalStorage` (its
 * own code, undici, ioredis: undici only captures the caller's, which is
 * none), so the server's bundle leaves it out. The library (scripts/build-lib.ts)
 * keeps it: its callers may rely on their own storage across a call. The build
 * fails if Effect's code no longer has the line this replaces.
 */
const noFiberAsyncContext: Plugin = {
  name: "no-fiber-async-context",
  setup(build) {
    build.onLoad({ filter: /effect[\\/]dist[\\/]internal[\\/]effect\.js$/ }, (args) => {
      const source = readFileSync(args.path, "utf8")
      const capture = "const captureAsyncContext = () => AsyncResource === undefined ? undefined : new AsyncResource(\"effect/Fiber\");"
      if (!source.includes(capture)) throw new Error(`${args.path} no longer has \`${capture}\`: update the no-fiber-async-context plugin of scripts/build.ts`)
      return { contents: source.replace(capture, "const captureAsyncContext = () => undefined;"), loader: "js" }
    })
  }
}

/** Builds kept besides the current one: a gateway still starting from one of them finds it whole. */
const KEEP_BUILDS = 3
/** A temporary build directory this old was left by a build that died. */
const STALE_MS = 3_600_000

const root = new URL("..", import.meta.url).pathname
const at = process.argv.indexOf("--outdir")
const outdir = at === -1 ? `${root}dist` : process.argv[at + 1]
const builds = join(outdir, "builds")
const staging = join(builds, `.tmp-${process.pid}-${randomUUID()}`)
const result = await build({
  entryPoints: { gateway: `${root}src/main.ts` },
  outdir: staging,
  write: false,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node24",
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  minifySyntax: true,
  legalComments: "none",
  logLevel: "warning",
  plugins: [lazyHttp2, noFiberAsyncContext],
  // CommonJS dependencies call require(); an ESM bundle gives them one.
  banner: { js: "import { createRequire as __gatewayRequire } from \"node:module\"; const require = __gatewayRequire(import.meta.url);" }
})

const files = result.outputFiles.map((file) => ({ path: relative(staging, file.path), contents: file.contents }))
  .sort((a, b) => (a.path < b.path ? -1 : 1))
const hash = createHash("sha256")
for (const file of files) hash.update(file.path).update("\0").update(file.contents)
const id = hash.digest("hex").slice(0, 16)
const current = join(builds, id)

if (existsSync(current)) {
  // Marks it recently used, so the clean-up below keeps it.
  utimesSync(current, new Date(), new Date())
} else {
  for (const file of files) {
    mkdirSync(dirname(join(staging, file.path)), { recursive: true })
    writeFileSync(join(staging, file.path), file.contents)
  }
  try {
    renameSync(staging, current)
  } catch (cause) {
    // A build of the same source running at the same time got there first: same files.
    if (!["ENOTEMPTY", "EEXIST"].includes((cause as NodeJS.ErrnoException).code ?? "")) throw cause
    rmSync(staging, { recursive: true, force: true })
  }
}

const link = join(outdir, "gateway.mjs")
const nextLink = join(outdir, `.gateway.mjs-${process.pid}-${randomUUID()}`)
symlinkSync(join("builds", id, "gateway.mjs"), nextLink)
renameSync(nextLink, link)

const now = Date.now()
const others = readdirSync(builds).filter((name) => name !== id).map((name) => ({ name, mtime: statSync(join(builds, name)).mtimeMs }))
const finished = others.filter((build) => !build.name.startsWith(".tmp-")).sort((a, b) => b.mtime - a.mtime)
const stale = others.filter((build) => build.name.startsWith(".tmp-") && now - build.mtime > STALE_MS)
for (const build of [...finished.slice(KEEP_BUILDS), ...stale]) rmSync(join(builds, build.name), { recursive: true, force: true })

const bytes = files.reduce((sum, file) => sum + file.contents.byteLength, 0)
process.stdout.write(`${current}: ${files.length} files, ${(bytes / 1048576).toFixed(1)} MiB (${link} links to it)\n`)
