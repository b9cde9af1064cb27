/**
 * Unicode full case folding, shared by the blocklist (which matches text and
 * terms folded alike) and the configuration check that finds a term given twice.
 */

/**
 * Upper case then lower case is Unicode's full case folding (CaseFolding.txt,
 * statuses C and F) for every code point but three, mended here: lower case
 * turns `ẞ` into `ß`, which folds on to `ss`; it writes a sigma at the end of
 * a word as `ς` (the only context it reads), which folds to `σ`, so a term's
 * last letter matches inside a longer word; and see `DOTLESS_I`.
 */
const upperThenLower = (text: string): string => {
  const lower = text.toUpperCase().toLowerCase()
  return SHARP_S_OR_FINAL_SIGMA.test(lower) ? lower.replace(SHARP_S_OR_FINAL_SIGMA_ALL, foldSharpSOrFinalSigma) : lower
}
const SHARP_S_OR_FINAL_SIGMA = /[ßς]/
const SHARP_S_OR_FINAL_SIGMA_ALL = /[ßς]/g
const foldSharpSOrFinalSigma = (letter: string): string => (letter === "ß" ? "ss" : "σ")

/** `ı` folds to itself (only Turkic folding pairs it with `I`); upper case would make it an `i`. */
const DOTLESS_I = "ı"

/** Unicode full case folding, context-free: the fold of a text is its code points' folds in a row. */
export const foldCase = (text: string): string =>
  text.includes(DOTLESS_I) ? text.split(DOTLESS_I).map(upperThenLower).join(DOTLESS_I) : upperThenLower(text)
