/**
 * What a request decoder records about caller content the canonical model does
 * not hold, in two kinds:
 * - `note`: left out, and harmless to leave out (a message `name`, an image
 *   `detail`): counted in `unmapped` under a `messages[]…`-style key, so an
 *   encoder of another family reports it in `x-gw-dropped-params`;
 * - `lose`: left out, and the answer would mean something else without it
 *   (audio input, a stored-file reference, a hosted tool, server-side state):
 *   listed in `untranslatable`, so only a same-family provider may serve it.
 */
export type Note = (key: string) => void

export const contentNotes = (unmapped: Record<string, unknown>): {
  readonly note: Note
  readonly lose: Note
  readonly untranslatable: Array<string>
} => {
  const untranslatable: Array<string> = []
  return {
    note: (key) => {
      unmapped[key] = ((unmapped[key] as number | undefined) ?? 0) + 1
    },
    lose: (key) => {
      if (!untranslatable.includes(key)) untranslatable.push(key)
    },
    untranslatable
  }
}
