/**
 * Weighted draws for the `weighted` strategy and experiment variants. With an
 * experiment key the draw is a stable hash of the key (sticky assignment: one
 * key always gets one variant); otherwise it uses Effect's `Random`, so tests
 * seed it.
 */
import { Effect, Random } from "effect"

/** Picks the entry whose cumulative weight covers `point` ∈ [0, 1). */
export const pickByWeight = <A extends { readonly weight: number }>(entries: ReadonlyArray<A>, point: number): A => {
  let total = 0
  for (const entry of entries) total += entry.weight
  let threshold = point * total
  for (const entry of entries) {
    threshold -= entry.weight
    if (threshold < 0) return entry
  }
  return entries[entries.length - 1]
}

/** FNV-1a over the key, mapped to [0, 1): stable across processes and restarts. */
export const stablePoint = (key: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  // One more avalanche round so similar keys spread out.
  hash ^= hash >>> 16
  hash = Math.imul(hash, 0x85ebca6b)
  hash ^= hash >>> 13
  return (hash >>> 0) / 0x1_0000_0000
}

export const drawWeighted = <A extends { readonly weight: number }>(
  entries: ReadonlyArray<A>,
  stickyKey?: string | undefined
): Effect.Effect<A> =>
  entries.length === 1
    ? Effect.succeed(entries[0])
    : stickyKey !== undefined
    ? Effect.succeed(pickByWeight(entries, stablePoint(stickyKey)))
    : Effect.map(Random.next, (point) => pickByWeight(entries, point))
