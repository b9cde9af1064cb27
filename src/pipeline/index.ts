/**
 * The pipeline's public face for the HTTP layer: the request context, the
 * per-request programs (chat, the other model endpoints), response writing,
 * forwarding, and the log they write to (src/infra/log.ts,
 * re-exported so the edge needs nothing from infra).
 */
export { JsonLog, Log } from "../infra/log.ts"
export type { LogLevel, LogSink } from "../infra/log.ts"
export { makeChatProgram } from "./chat/run.ts"
export type { ChatDependencies, ChatInput } from "./chat/run.ts"
export { header } from "./context.ts"
export type { CallerRequest, RequestContext, RequestLogFields } from "./context.ts"
export * from "./forward/index.ts"
export { jsonBody, makeProxyProgram } from "./proxy.ts"
export type { ProxyBody, ProxyDependencies, ProxyInput } from "./proxy.ts"
export { attemptScoped, bodyReply, ensuringBody, failureReply, followedBy, onBodyExit, isValueBody, JSON_CONTENT_TYPE, jsonReply, logFailure, pushHeaders, pushSourceOf, pushStream, renderFailure, reply, tapChunks } from "./reply.ts"
export type { Answer, BodyExit, EventTap, PushSource, Reply, ReplyHeaders, ReplyStream } from "./reply.ts"
export * from "./cache/index.ts"
export * from "./metrics/index.ts"
export * from "./security/index.ts"
export * from "./telemetry/index.ts"
export * from "./limits/index.ts"
export * from "./responses/index.ts"
