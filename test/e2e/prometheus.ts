/**
 * Reading the Prometheus text format back in tests: every sample as its name,
 * labels and value, and the value of the one sample whose labels include the
 * ones asked for.
 */
import { expect } from "vitest"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export const parsePrometheus = (text: string): Array<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = SAMPLE.exec(line)
    if (match === null) throw new Error(`not a Prometheus sample: ${line}`)
    const labels = Object.fromEntries([...(match[2] ?? "").matchAll(LABEL)].map((label) => [label[1], label[2]]))
    return { name: match[1], labels, value: Number(match[3]) }
  })

/** The value of the one sample named `name` whose labels include `labels` (0 when there is none). */
export const sampleOf = (samples: ReadonlyArray<Sample>, name: string, labels: Readonly<Record<string, string>>): number => {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
  expect(found.length, `samples of ${name} ${JSON.stringify(labels)}`).toBeLessThanOrEqual(1)
  return found[0]?.value ?? 0
}
