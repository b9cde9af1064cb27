#!/usr/bin/env bash
# Makes sure a Redis answers at $REDIS_URL (default redis://127.0.0.1:6379) before
# the tests run: starts a local redis-server when none answers, installing it with
# apt-get only in CI (CI=true) when the binary is missing. Keeps nothing on disk.
# Then makes sure a Redis Cluster answers at $REDIS_CLUSTER_URL (scripts/ensure-cluster.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
url="${REDIS_URL:-redis://127.0.0.1:6379}"
hostport="${url#redis://}"; hostport="${hostport##*@}"; hostport="${hostport%%/*}"
host="${hostport%%:*}"; port="${hostport##*:}"
[ "$port" = "$host" ] && port=6379

# shellcheck source=redis-lib.sh
. "$here/redis-lib.sh"

if answers "$host" "$port"; then exec bash "$here/ensure-cluster.sh"; fi
case "$host" in
  127.0.0.1|localhost|::1) ;;
  *) echo "ensure-redis: no Redis answers at $host:$port and it is not local; not starting one" >&2; exit 1 ;;
esac
if ! have_redis_server; then
  echo "ensure-redis: no Redis at $host:$port and redis-server is not installed (install it, or set REDIS_URL)" >&2
  exit 1
fi
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no >/dev/null
for _ in $(seq 1 50); do
  if answers "$host" "$port"; then exec bash "$here/ensure-cluster.sh"; fi
  sleep 0.1
done
echo "ensure-redis: started redis-server but it does not answer at $host:$port" >&2
exit 1
