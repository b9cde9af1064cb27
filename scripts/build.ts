/**
 * `npm run build`: the production bundle `npm start` runs. One ESM bundle of
 * src/main.ts and its dependencies, tree-shaken (only the parts of Effect,
 * undici, OpenTelemetry… the gateway uses are loaded), with code split at the
 * dynamic imports so a stage that is off (telemetry, Redis, the batch and
 * snapshot commands) is never loaded. The source stays the source of truth:
 * tests run it directly.
 */
import { build } from "esbuild"
import type { Plugin } from "esbuild"
import { readFileSync, rmSync } from "node:fs"
import { constants as http2Constants } from "node:http2"

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

const root = new URL("..", import.meta.url).pathname
const at = process.argv.indexOf("--outdir")
const outdir = at === -1 ? `${root}dist` : process.argv[at + 1]
rmSync(outdir, { recursive: true, force: true })
const result = await build({
  entryPoints: { gateway: `${root}src/main.ts` },
  outdir,
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
  metafile: true,
  plugins: [lazyHttp2],
  // CommonJS dependencies call require(); an ESM bundle gives them one.
  banner: { js: "import { createRequire as __gatewayRequire } from \"node:module\"; const require = __gatewayRequire(import.meta.url);" }
})
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0)
process.stdout.write(`${outdir}: ${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1048576).toFixed(1)} MiB\n`)
