/**
 * `npm run build`: the production bundle `npm start` runs. One ESM bundle of
 * src/main.ts and its dependencies, tree-shaken (only the parts of Effect,
 * undici, OpenTelemetry… the gateway uses are loaded), with code split at the
 * dynamic imports so a stage that is off (telemetry, Redis, the batch and
 * snapshot commands) is never loaded. The source stays the source of truth:
 * tests run it directly.
 */
import { build } from "esbuild"
import { rmSync } from "node:fs"

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
  // CommonJS dependencies call require(); an ESM bundle gives them one.
  banner: { js: "import { createRequire as __gatewayRequire } from \"node:module\"; const require = __gatewayRequire(import.meta.url);" }
})
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0)
process.stdout.write(`${outdir}: ${Object.keys(result.metafile.outputs).length} files, ${(bytes / 1048576).toFixed(1)} MiB\n`)
