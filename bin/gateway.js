#!/usr/bin/env node
// The `gateway` command (`npx gateway …`): the TypeScript sources in a
// checkout; the built lib/ in the npm package, which ships no src/ because
// Node will not strip types from a file under node_modules.
import { existsSync } from "node:fs"

const source = new URL("../src/main.ts", import.meta.url)
await import(existsSync(source) ? source.href : new URL("../lib/main.js", import.meta.url).href)
