# Sourced by ensure-redis.sh and ensure-cluster.sh.

# answers HOST PORT: whether a Redis answers PING there (plain TCP, no client needed).
answers() {
  { exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  local reply
  read -r -t 2 reply <&3 || { exec 3>&-; return 1; }
  exec 3>&-
  [[ "$reply" == +PONG* ]]
}

# have_redis_server: redis-server (and redis-cli) on the PATH, installed with apt-get only in CI (CI=true).
have_redis_server() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return 0
  if [ "${CI:-}" = "true" ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-redis: installing redis-server (CI)" >&2
    (apt-get install -y -qq redis-server >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq redis-server >/dev/null 2>&1))
  fi
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1
}
