/**
 * "Did you mean …?" for names the configuration does not know: keys, model
 * names, target and provider ids, variant parameters. Runs only while a file
 * is checked, never per request.
 */

/** Levenshtein distance: insertions, deletions and substitutions. */
const editDistance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length]
}

/**
 * The known name closest to `name` (ignoring case), when at most `maxEdits`
 * edits away; by default a third of its length, at least 2, which catches
 * typos without suggesting unrelated names.
 */
export const closestName = (
  name: string,
  known: Iterable<string>,
  maxEdits: number = Math.max(2, Math.floor(name.length / 3))
): string | undefined => {
  const lower = name.toLowerCase()
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  // A name with every character changed is a different name, not a typo ("zz" is not "m").
  return bestDistance <= maxEdits && bestDistance < name.length ? best : undefined
}

/** `; did you mean "…"?` after a message about an unknown name, or nothing when no known name is close. */
export const didYouMean = (name: string, known: Iterable<string>, maxEdits?: number): string => {
  const suggestion = closestName(name, known, maxEdits)
  return suggestion === undefined ? "" : `; did you mean "${suggestion}"?`
}
