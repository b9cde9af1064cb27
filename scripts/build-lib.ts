/**
 * `npm run build:lib` (and `npm pack`, through `prepack`): the npm package's
 * lib/. Node runs the TypeScript sources in this repository, but refuses to
 * strip types from a file under node_modules, so the package ships
 * src/index.ts, src/testing.ts, the CLI (src/main.ts) and every module they
 * reach as JavaScript, with `.d.ts` declarations beside them
 * (tsconfig.lib.json). Emptied first, so a module deleted from src/ is not
 * shipped from an earlier build.
 */
import { execFileSync } from "node:child_process"
import { rmSync } from "node:fs"

const root = new URL("..", import.meta.url).pathname
rmSync(`${root}lib`, { recursive: true, force: true })
execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, "-p", `${root}tsconfig.lib.json`], { stdio: "inherit" })
