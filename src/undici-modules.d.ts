// undici's modules, imported by path (src/providers/undici.ts); typed there from the package's own declarations.
declare module "undici/lib/dispatcher/agent.js" {
  const Agent: unknown
  export default Agent
}
declare module "undici/lib/dispatcher/pool.js" {
  const Pool: unknown
  export default Pool
}
declare module "undici/lib/api/api-request.js" {
  const request: unknown
  export default request
}
