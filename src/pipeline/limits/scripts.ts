/**
 * The two server-side scripts of the limits store: one admission and one
 * settlement per request and subject (a gateway key or a project), each one
 * atomic in Redis, so gateways sharing the store admit no more than a limit
 * between them. The store's own clock (`TIME`) is the one every gateway reads.
 *
 * Keys of a subject (one hash tag, so a cluster keeps them on one node):
 * - `req`: sorted set of admitted requests by time (requests in any 60 s);
 * - `conc`: sorted set of running requests by the time their slot lapses (a
 *   gateway that dies without settling frees its slots at `slotTtlMs`);
 * - `tok`: sorted set of token entries by time; `tokv`: hash entry → tokens,
 *   with `#` the window's running total (so no admission sums the window);
 * - `day` / `month`: spend in micro-USD of the UTC day and month (keys named
 *   by the gateway, so each period starts at zero).
 *
 * A budget is charged the request's estimated cost at admission (refused when
 * it would pass the budget, or when the budget is spent) and corrected by
 * the settlement to what the request cost.
 *
 * Admission answers `{verdict, requests in window, ms until the oldest leaves,
 * tokens in window, ms until the oldest tokens leave}`; verdict 0 admits (and
 * records), 1 requests, 2 tokens, 3 concurrency, 4 day budget, 5 month budget.
 */

const WINDOW = `local WINDOW = 60000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

/** Drops the token entries older than the window from the total; returns the total left. */
const EXPIRE_TOKENS = `local function expireTokens()
  local total = tonumber(redis.call('HGET', KEYS[4], '#') or '0')
  local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - WINDOW)
  if #expired > 0 then
    for i = 1, #expired, 500 do
      local chunk = {unpack(expired, i, math.min(i + 499, #expired))}
      for _, value in ipairs(redis.call('HMGET', KEYS[4], unpack(chunk))) do
        if value then total = total - tonumber(value) end
      end
      redis.call('HDEL', KEYS[4], unpack(chunk))
    end
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - WINDOW)
    if total < 0 then total = 0 end
    redis.call('HSET', KEYS[4], '#', total)
  end
  return total
end
-- Adds micro-USD (negative: a refund of a reservation) to the day and month spend.
local function charge(amount, dayTtl, monthTtl)
  redis.call('INCRBY', KEYS[5], amount)
  redis.call('EXPIRE', KEYS[5], tonumber(dayTtl))
  redis.call('INCRBY', KEYS[6], amount)
  redis.call('EXPIRE', KEYS[6], tonumber(monthTtl))
end
-- A new token entry of the window (a reservation, or usage whose reservation has left it).
local function addTokens(member, amount, total)
  redis.call('ZADD', KEYS[3], now, member)
  redis.call('HSET', KEYS[4], member, amount, '#', total + amount)
  redis.call('PEXPIRE', KEYS[3], WINDOW)
  redis.call('PEXPIRE', KEYS[4], WINDOW)
end`

/**
 * KEYS: req, conc, tok, tokv, day, month. ARGV: member, rpm, tpm, concurrent,
 * estimate, slotTtlMs, day budget, month budget, estimated cost (micro-USD;
 * budget 0 = none), day TTL s, month TTL s.
 */
export const ADMIT = `${WINDOW}
${EXPIRE_TOKENS}
local member = ARGV[1]
local rpm, tpm, conc = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local estimate, slotTtl = tonumber(ARGV[5]), tonumber(ARGV[6])
local dayBudget, monthBudget, cost = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local requests, requestsReset, tokens, tokensReset = 0, WINDOW, 0, WINDOW
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - WINDOW)
  requests = redis.call('ZCARD', KEYS[1])
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if oldest[2] then requestsReset = tonumber(oldest[2]) + WINDOW - now end
  if requests >= rpm then return {1, requests, requestsReset, 0, tokensReset} end
end
if tpm > 0 then
  tokens = expireTokens()
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if oldest[2] then tokensReset = tonumber(oldest[2]) + WINDOW - now end
  if tokens > 0 and tokens + estimate > tpm then return {2, requests, requestsReset, tokens, tokensReset} end
end
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= conc then return {3, requests, requestsReset, tokens, tokensReset} end
end
local function overBudget(key, budget)
  if budget <= 0 then return false end
  local spent = tonumber(redis.call('GET', key) or '0')
  return spent >= budget or spent + cost > budget
end
if overBudget(KEYS[5], dayBudget) then return {4, requests, requestsReset, tokens, tokensReset} end
if overBudget(KEYS[6], monthBudget) then return {5, requests, requestsReset, tokens, tokensReset} end
if rpm > 0 then
  redis.call('ZADD', KEYS[1], now, member)
  redis.call('PEXPIRE', KEYS[1], WINDOW)
end
if tpm > 0 then addTokens(member, estimate, tokens) end
if conc > 0 then
  redis.call('ZADD', KEYS[2], now + slotTtl, member)
  redis.call('PEXPIRE', KEYS[2], slotTtl)
end
if cost > 0 then charge(cost, ARGV[10], ARGV[11]) end
return {0, requests + 1, requestsReset, tokens + estimate, tokensReset}`

/**
 * KEYS: req, conc, tok, tokv, day, month. ARGV: member, tokens used (-1:
 * unknown, the reservation stands), cost minus the cost reserved (micro-USD), cancel (1: the request
 * never ran: it leaves the request window too), day TTL s, month TTL s,
 * whether the subject counts tokens (1) at all.
 * Tokens whose reservation already left the window are counted from now.
 */
export const SETTLE = `${WINDOW}
${EXPIRE_TOKENS}
local member = ARGV[1]
local used, cost, cancel = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
redis.call('ZREM', KEYS[2], member)
if cancel then
  redis.call('ZREM', KEYS[1], member)
  used = 0
end
if used >= 0 and ARGV[7] == '1' then
  local total = expireTokens()
  local reserved = redis.call('HGET', KEYS[4], member)
  if reserved then
    total = total - tonumber(reserved) + used
    redis.call('HSET', KEYS[4], member, used, '#', math.max(total, 0))
  elseif used > 0 then
    addTokens(member, used, total)
  end
end
if cost ~= 0 then charge(cost, ARGV[5], ARGV[6]) end
return 0`
