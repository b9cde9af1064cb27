/**
 * Redis's protocol (RESP), for a command a store writes itself
 * (`RedisPool.sendWritten`): a command is `*<count>\r\n` and then each of
 * its name and arguments as a bulk string. Apart from the pool, so a stage can
 * write its commands without loading ioredis.
 */

/** One argument of a command: its length in bytes, then the argument. */
export const bulkString = (value: string | number): string => {
  const text = String(value)
  return `$${typeof value === "number" ? text.length : Buffer.byteLength(text)}\r\n${text}\r\n`
}
