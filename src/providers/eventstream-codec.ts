/**
 * Amazon's event-stream codec (`@smithy/eventstream-codec`), in a module of its
 * own so framing.ts can load it on demand (a static import here lets the bundler
 * bridge the package's CommonJS exports).
 */
import { EventStreamCodec } from "@smithy/eventstream-codec"
import { fromUtf8, toUtf8 } from "@smithy/util-utf8"

export const makeEventStreamCodec = (): EventStreamCodec => new EventStreamCodec(toUtf8, fromUtf8)
