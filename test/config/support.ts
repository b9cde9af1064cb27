/**
 * Helpers for the configuration tests: validate a document (the parsed TOML
 * shape) with an explicit environment, and write TOML to temporary files.
 * Nothing here reads the machine's real environment.
 */
import { Result } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { settingsFromDocument } from "../../src/config/index.ts"
import type { GatewaySettings } from "../../src/config/index.ts"

export type Env = Readonly<Record<string, string | undefined>>

/** The source name the document tests pass; every message starts with it. */
export const SOURCE = "test-gateway.toml"

/** `invalid configuration in <SOURCE>: ` — the prefix of a one-line failure. */
export const INVALID = `invalid configuration in ${SOURCE}: `

/** The document validated; throws with the message when it is invalid. */
export const load = (document: unknown, env: Env = {}): GatewaySettings => {
  const result = settingsFromDocument(document, env, SOURCE)
  if (Result.isFailure(result)) throw new Error(`expected a valid configuration, got:\n${result.failure.message}`)
  return result.success
}

/** The failure message; throws when the document is valid. */
export const failure = (document: unknown, env: Env = {}): string => {
  const result = settingsFromDocument(document, env, SOURCE)
  if (Result.isSuccess(result)) throw new Error(`expected an invalid configuration; warnings: ${JSON.stringify(result.success.warnings)}`)
  return result.failure.message
}

/** Warnings of a valid document. */
export const warningsOf = (document: unknown, env: Env = {}): ReadonlyArray<string> => load(document, env).warnings

/** A document with an empty `[server]` (every server default) plus the given sections. */
export const withServer = (sections: Record<string, unknown> = {}): Record<string, unknown> => ({ server: {}, ...sections })

/** One OpenAI provider serving `models`, plus the given sections. */
export const withOpenAi = (models: ReadonlyArray<string>, sections: Record<string, unknown> = {}): Record<string, unknown> =>
  withServer({ providers: { openai: { models } }, ...sections })

export interface TempFiles {
  readonly dir: string
  /** Writes `text` to `name` inside the directory and returns its path. */
  write(name: string, text: string): string
  cleanup(): void
}

/** A fresh directory under the OS temp dir; call `cleanup` (afterEach) to remove it. */
export const tempFiles = (): TempFiles => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-config-test-"))
  return {
    dir,
    write(name, text) {
      const path = join(dir, name)
      writeFileSync(path, text)
      return path
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
