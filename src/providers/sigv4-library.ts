/**
 * `@smithy/signature-v4`, in a module of its own so sigv4.ts can load it with
 * the first signature (a static import here lets the bundler bridge the
 * package's CommonJS exports).
 */
export { SignatureV4 } from "@smithy/signature-v4"
