/**
 * AWS Signature Version 4 for Bedrock (`auth_type = "sigv4"`): each request is
 * signed over its method, path, host, `content-type` and exact body bytes with
 * `@smithy/signature-v4` (service `bedrock`, the provider's region), the
 * SHA-256 and HMAC from node:crypto. Credentials are resolved once, with the
 * configuration (src/config/aws-credentials.ts: the provider's `env::` locations,
 * default `AWS_ACCESS_KEY_ID` …, or a tenant snapshot's keys), and kept `Redacted`. The library is loaded with the first signature, so a
 * gateway without a SigV4 provider never loads it.
 */
import type { SignatureV4 } from "@smithy/signature-v4"
import { Redacted } from "effect"
import { createHash, createHmac } from "node:crypto"
import type { Hash, Hmac } from "node:crypto"

export interface AwsCredentials {
  readonly accessKeyId: string
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly sessionToken?: Redacted.Redacted<string> | undefined
}

/** The sha256 constructor the signer wants: a hash, or an HMAC when given a secret. */
class NodeSha256 {
  private readonly hash: Hash | Hmac
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key = typeof secret === "string" || secret === undefined
      ? secret
      : ArrayBuffer.isView(secret)
      ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength)
      : Buffer.from(secret)
    this.hash = key === undefined ? createHash("sha256") : createHmac("sha256", key)
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(typeof data === "string" ? data : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data))
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest())
  }
}

/**
 * What a signed request adds: `authorization`, `x-amz-date`, `x-amz-content-sha256`, and the session
 * token when there is one (SigV4); a bearer (Google credentials). `body`, when set, replaces the
 * request's (Claude on Vertex takes its version in the body, not its model).
 */
export type SignRequest = (request: {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | Uint8Array
}) => Promise<{ readonly headers: Record<string, string>; readonly body?: string | undefined }>

/** A signer for requests to `origin` (its host is signed) in `region`. */
export const sigv4Signer = (origin: string, region: string, credentials: AwsCredentials, service = "bedrock"): SignRequest => {
  const url = new URL(origin)
  let signerOnce: Promise<SignatureV4> | undefined
  const signerOf = () =>
    signerOnce ??= import("./sigv4-library.ts").then(({ SignatureV4 }) =>
      new SignatureV4({
        service,
        region,
        sha256: NodeSha256,
        applyChecksum: true,
        credentials: () =>
          Promise.resolve({
            accessKeyId: credentials.accessKeyId,
            secretAccessKey: Redacted.value(credentials.secretAccessKey),
            ...(credentials.sessionToken === undefined ? {} : { sessionToken: Redacted.value(credentials.sessionToken) })
          })
      })
    )
  return async ({ method, path, headers, body }) => {
    const signer = await signerOf().catch((error: unknown) => {
      signerOnce = undefined // a failed load is tried again with the next request
      throw error
    })
    const at = path.indexOf("?")
    const query = at < 0 ? {} : Object.fromEntries(new URLSearchParams(path.slice(at + 1)))
    const signed = await signer.sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === "" ? undefined : Number(url.port),
      path: at < 0 ? path : path.slice(0, at),
      query,
      headers: { ...headers, host: url.host },
      body
    })
    const out: Record<string, string> = {}
    for (const [name, value] of Object.entries(signed.headers)) {
      const lower = name.toLowerCase()
      if (lower === "authorization" || lower.startsWith("x-amz-")) out[lower] = value
    }
    return { headers: out }
  }
}
