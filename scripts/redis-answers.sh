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
