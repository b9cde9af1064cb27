export * from "./chat.ts"
export * from "./envelope.ts"
export * from "./errors.ts"
export * from "./sdk.ts"
