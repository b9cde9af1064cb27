/**
 * The guardrail scan on its own, in this process: a 100 KB prompt scanned
 * (PII and the blocklist) against 10, 1,000 and 10,000 blocklist terms.
 * Bounded: a fixed number of scans per size. Run alone with
 * `node bench/guardrail.ts`; `npm run bench` includes its figures.
 */
import { compileGuardPolicy } from "../src/pipeline/security/index.ts"
import { randomWords } from "../test/fixtures/words.ts"

/** About 100 KB of ordinary prose with numbers, dates and code in it, and no violation. */
const PROMPT = Array.from({ length: 400 }, (_, i) =>
  `Paragraph ${i}: on 2024-03-${String((i % 28) + 1).padStart(2, "0")} the team shipped build ${i}.${i % 10}.0, ` +
  `cutting p99 latency by ${(i % 17) + 3}% (see ticket ORD-${100000 + i}). Call sites: render(${i}), total += x * 2.5;\n`
).join("").padEnd(100 * 1024, " lorem ipsum dolor sit amet")

const SCANS = 200

export const runGuardrailBench = async (): Promise<Record<string, number>> => {
  const results: Record<string, number> = { prompt_bytes: Buffer.byteLength(PROMPT) }
  for (const count of [10, 1_000, 10_000]) {
    const policy = compileGuardPolicy({ enabled: true, blocklist: randomWords(count, count), output_guardrails: false })
    if (policy.scanText(PROMPT) !== undefined) throw new Error("the benchmark prompt must pass")
    for (let i = 0; i < 20; i++) policy.scanText(PROMPT)
    const started = performance.now()
    for (let i = 0; i < SCANS; i++) policy.scanText(PROMPT)
    results[`scan_100kb_ms_${count}_terms`] = Math.round(((performance.now() - started) / SCANS) * 1000) / 1000
  }
  return results
}

if (import.meta.main) {
  console.table(await runGuardrailBench())
}
