/**
 * The Redis URLs the gateway accepts, and how a log may show one. No Redis
 * client is loaded here (a gateway without Redis imports this too).
 *
 * Forms
 * - One server: `redis://[user:password@]host[:port][/db]`, `rediss://` for TLS.
 * - A Redis Cluster: `redis+cluster://[user:password@]host:port[,host:port…]`
 *   (`rediss+cluster://` for TLS): the seed nodes, from which the client
 *   learns the others. A `redis://` or `rediss://` URL naming several
 *   comma-separated hosts is a cluster too. A cluster has no database
 *   number: a path other than `/` or `/0` is refused.
 *
 * Gotchas
 * - A URL's password must never reach a log: `shown` replaces it, `target`
 *   is host and port alone, and `scrub` removes the password from any error
 *   text that might repeat it.
 * - `new URL` refuses a list of hosts, so the cluster form is parsed here.
 */

export interface RedisNodeAddress {
  readonly host: string
  readonly port: number
}

export type RedisTarget =
  | { readonly _tag: "Server"; readonly url: string }
  | {
    readonly _tag: "Cluster"
    readonly tls: boolean
    readonly nodes: ReadonlyArray<RedisNodeAddress>
    readonly username: string | undefined
    readonly password: string | undefined
  }

const CLUSTER_SCHEMES: Readonly<Record<string, boolean>> = { "redis+cluster:": false, "rediss+cluster:": true }
const SERVER_SCHEMES: Readonly<Record<string, boolean>> = { "redis:": false, "rediss:": true }

/** `host[:port]` (a bracketed IPv6 host too), or undefined. */
const nodeOf = (text: string): RedisNodeAddress | undefined => {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+)(?::(\d{1,5}))?$/.exec(text)
  if (match === null) return undefined
  const port = match[2] === undefined ? 6379 : Number(match[2])
  if (port < 1 || port > 65535) return undefined
  const host = match[1].startsWith("[") ? match[1].slice(1, -1) : match[1]
  return { host, port }
}

const decoded = (text: string | undefined): string | undefined => {
  if (text === undefined || text === "") return undefined
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/** What a URL names: one server, a cluster's seed nodes, or undefined when it is neither. */
export const parseRedisUrl = (url: string): RedisTarget | undefined => {
  const scheme = /^([a-z+]+:)\/\//.exec(url)?.[1]
  if (scheme === undefined) return undefined
  const rest = url.slice(scheme.length + 2)
  const clusterTls = CLUSTER_SCHEMES[scheme]
  const serverTls = SERVER_SCHEMES[scheme]
  if (clusterTls === undefined && serverTls === undefined) return undefined
  const authorityEnd = rest.search(/[/?#]/)
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)
  const path = authorityEnd === -1 ? "" : rest.slice(authorityEnd)
  const at = authority.lastIndexOf("@")
  const userinfo = at === -1 ? undefined : authority.slice(0, at)
  const hosts = authority.slice(at + 1).split(",")
  if (clusterTls === undefined && hosts.length === 1) {
    try {
      const parsed = new URL(url)
      return parsed.hostname === "" ? undefined : { _tag: "Server", url }
    } catch {
      return undefined
    }
  }
  if (path !== "" && path !== "/" && path !== "/0") return undefined
  const nodes: Array<RedisNodeAddress> = []
  for (const host of hosts) {
    const node = nodeOf(host)
    if (node === undefined) return undefined
    nodes.push(node)
  }
  const colon = userinfo?.indexOf(":") ?? -1
  return {
    _tag: "Cluster",
    tls: clusterTls ?? serverTls ?? false,
    nodes,
    username: decoded(userinfo === undefined ? undefined : colon === -1 ? userinfo : userinfo.slice(0, colon)),
    password: decoded(userinfo === undefined || colon === -1 ? undefined : userinfo.slice(colon + 1))
  }
}

/** What a client connects to: a URL the checks refused (a test's) is left to ioredis as one server's. */
export const redisEndpoint = (url: string): RedisTarget => parseRedisUrl(url) ?? { _tag: "Server", url }

/** Whether the gateway's Redis clients accept `url`: one server or a cluster, with a host. */
export const isRedisUrl = (url: string): boolean => parseRedisUrl(url) !== undefined

export interface RedisLogTarget {
  /** The URL with its password replaced by `redacted`. */
  readonly shown: string
  /** `host:port`, or a cluster's seeds `host:port,host:port`. */
  readonly target: string
  readonly scrub: (text: string) => string
}

const UNPARSABLE: RedisLogTarget = { shown: "<unparsable url>", target: "(unparsable redis URL)", scrub: (text) => text }

const scrubbing = (password: string | undefined) => (text: string) => password === undefined ? text : text.split(password).join("redacted")

export const redisLogTarget = (url: string): RedisLogTarget => {
  const parsed = parseRedisUrl(url)
  if (parsed === undefined) return UNPARSABLE
  if (parsed._tag === "Cluster") {
    const target = parsed.nodes.map((node) => `${node.host.includes(":") ? `[${node.host}]` : node.host}:${node.port}`).join(",")
    const scheme = url.slice(0, url.indexOf("://"))
    const user = parsed.username === undefined && parsed.password === undefined
      ? ""
      : `${parsed.username === undefined ? "" : encodeURIComponent(parsed.username)}${parsed.password === undefined ? "" : ":redacted"}@`
    return { shown: `${scheme}://${user}${target}`, target, scrub: scrubbing(parsed.password) }
  }
  try {
    const server = new URL(url)
    const target = `${server.hostname}:${server.port === "" ? "6379" : server.port}`
    if (server.password === "") return { shown: server.href, target, scrub: (text) => text }
    const password = decodeURIComponent(server.password)
    server.password = "redacted"
    return { shown: server.href, target, scrub: scrubbing(password) }
  } catch {
    return UNPARSABLE
  }
}
