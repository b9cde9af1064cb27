/**
 * Giving back the memory of large request bodies once they stop coming.
 *
 * A body of megabytes leaves garbage behind it: its bytes, the JSON text and
 * the strings parsed from it. V8 frees that at its next full GC, but an idle
 * gateway allocates nothing, so no GC comes: V8's memory reducer, still
 * seeing the burst's allocation rate, waits for its watchdog (about 100 s).
 * Measured (bench/body-burst.ts, `npm start`): 76 MiB idle, 286 MiB still
 * 60 s after 120 bodies of 10 MB. So after a body of `LARGE_BODY_BYTES` or
 * more, one full GC runs once no such body has been read for `QUIET_MS`.
 *
 * Details
 * - The GC is asked of V8 through an in-process inspector session
 *   (`node:inspector`: no port is opened, no flag is needed, the source and
 *   the bundle alike), loaded on the first large body.
 * - Under a steady flow of large bodies none is forced: each one moves the
 *   quiet period on, and V8 collects on its own while the gateway allocates.
 *   Small bodies never get here (one comparison per body).
 * - That memory also has to leave the process once freed: `npm start` runs
 *   with `MALLOC_MMAP_THRESHOLD_=32768` (package.json), so that buffers of
 *   32 KiB and more (a body's chunks as Node reads them, up to 64 KiB each,
 *   and the body joined whole) are mapped on their own and unmapped when
 *   freed. With glibc's default (128 KiB, raised up to 32 MiB as larger
 *   buffers are freed) they land in malloc's heap, which glibc gives back
 *   only from its top, so a few small live allocations above them hold it
 *   all. Measured after the body burst on a busy core (bench/body-burst.ts):
 *   RSS 1.57× idle at 64 KiB, 1.52× at 48 KiB, 1.28× at 32 KiB (heap chunks
 *   the parser cut short). The price, with strace: 0.03–0.08 (JSON) and 0.14–0.18
 *   (stream) mmap/munmap pairs per small request at 32 KiB, none at 48 KiB.
 *
 * Gotchas
 * - Plain Node timer, unreferenced (it never keeps the process alive): this
 *   is the edge's housekeeping, outside any Effect program.
 * - The forced GC pauses the process once after the last large body, not
 *   per request: V8's low-memory collection, two or three full GCs in a row
 *   (30–95 ms in all on the bench machine with a 35 MB heap), which also
 *   drops compiled code caches, so the next requests compile a little again.
 */
import type * as Inspector from "node:inspector"
import { createRequire } from "node:module"

/** A body this large (bytes) asks for a GC once large bodies stop. */
export const LARGE_BODY_BYTES = 1024 * 1024
/** How long no large body must have been read before the GC runs. */
export const QUIET_MS = 2_000

let timer: NodeJS.Timeout | undefined

/** A full GC, through an in-process inspector session; nothing when Node has no inspector. */
const collectGarbage = (): void => {
  let session: Inspector.Session
  try {
    const { Session } = createRequire(import.meta.url)("node:inspector") as typeof Inspector
    session = new Session()
    session.connect()
  } catch {
    return
  }
  // Disconnected on the next turn: from within the callback, V8 waits on a lock it holds (a deadlock).
  session.post("HeapProfiler.collectGarbage", () => setImmediate(() => session.disconnect()))
}

/** Called with the size of every body read whole or streamed: a large one (re)starts the quiet period. */
export const bodyRead = (bytes: number): void => {
  if (bytes < LARGE_BODY_BYTES) return
  if (timer !== undefined) {
    timer.refresh()
    return
  }
  timer = setTimeout(() => {
    timer = undefined
    collectGarbage()
  }, QUIET_MS)
  timer.unref()
}
