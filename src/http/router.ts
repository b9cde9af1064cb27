/**
 * Route table: exact paths in a map (the chat endpoints are one lookup),
 * `{param}` patterns and `*` rests checked in order. Compiled once at start.
 */
import type { Effect, Scope } from "effect"
import type { AnyGatewayFailure } from "../domain/index.ts"
import type { Answer } from "../pipeline/index.ts"
import type { HttpRequestContext } from "./context.ts"

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "*"

/** A route's program: its `Reply`, in the request's `Scope` (closed when the request ends, the reply written or not). */
export type Handler<R> = (ctx: HttpRequestContext) => Effect.Effect<Answer, AnyGatewayFailure, R | Scope.Scope>

export interface RouteDef<R> {
  readonly method: Method
  /** `/v1/models/{model_id}`, `/v1/bedrock/*`. */
  readonly path: string
  readonly handler: Handler<R>
}

export type Match<R> =
  | {
    readonly _tag: "Found"
    readonly handler: Handler<R>
    readonly params: Readonly<Record<string, string>>
    /** The matched route's template (`/v1/files/{file_id}`): the server span's `http.route`, never the raw ids. */
    readonly route: string
  }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "MethodNotAllowed"; readonly allow: string }

interface Pattern<R> {
  readonly template: string
  readonly segments: ReadonlyArray<string>
  readonly rest: boolean
  readonly methods: Map<string, Handler<R>>
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({})

const byMethod = <R>(methods: Map<string, Handler<R>>, method: string): Handler<R> | undefined =>
  methods.get(method) ?? methods.get("*") ?? (method === "HEAD" ? methods.get("GET") : undefined)

export class Router<R> {
  private readonly exact = new Map<string, Map<string, Handler<R>>>()
  private readonly patterns: Array<Pattern<R>> = []

  constructor(routes: ReadonlyArray<RouteDef<R>>) {
    for (const route of routes) {
      if (!route.path.includes("{") && !route.path.endsWith("*")) {
        const methods = this.exact.get(route.path) ?? new Map()
        methods.set(route.method, route.handler)
        this.exact.set(route.path, methods)
        continue
      }
      const rest = route.path.endsWith("/*")
      const segments = (rest ? route.path.slice(0, -2) : route.path).split("/").slice(1)
      const existing = this.patterns.find((p) => p.rest === rest && p.segments.join("/") === segments.join("/"))
      const methods = existing?.methods ?? new Map()
      methods.set(route.method, route.handler)
      if (existing === undefined) this.patterns.push({ template: route.path, segments, rest, methods })
    }
  }

  match(method: string, path: string): Match<R> {
    const route = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path
    const exact = this.exact.get(route)
    if (exact !== undefined) {
      const handler = byMethod(exact, method)
      return handler === undefined
        ? { _tag: "MethodNotAllowed", allow: [...exact.keys()].join(", ") }
        : { _tag: "Found", handler, params: EMPTY, route }
    }
    const parts = path.split("/").slice(1)
    for (const pattern of this.patterns) {
      const params = matchPattern(pattern, parts)
      if (params === undefined) continue
      const handler = byMethod(pattern.methods, method)
      return handler === undefined
        ? { _tag: "MethodNotAllowed", allow: [...pattern.methods.keys()].join(", ") }
        : { _tag: "Found", handler, params, route: pattern.template }
    }
    return { _tag: "NotFound" }
  }
}

const matchPattern = <R>(pattern: Pattern<R>, parts: ReadonlyArray<string>): Record<string, string> | undefined => {
  const { segments, rest } = pattern
  if (rest ? parts.length < segments.length : parts.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]
    if (segment.startsWith("{")) {
      if (parts[i] === "") return undefined
      try {
        params[segment.slice(1, -1)] = decodeURIComponent(parts[i])
      } catch {
        return undefined
      }
    } else if (segment !== parts[i]) {
      return undefined
    }
  }
  if (rest) params["*"] = parts.slice(segments.length).join("/")
  return params
}
