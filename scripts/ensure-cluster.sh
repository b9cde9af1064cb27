#!/usr/bin/env bash
# Makes sure a Redis Cluster answers at $REDIS_CLUSTER_URL (default
# redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002) before the tests
# run. When its nodes are local and none answers, starts three masters (no
# replicas) on those ports and creates the cluster; a node that is missing from
# a running cluster (a test killed it) is started again from its nodes file.
# Nodes keep only their cluster state (nodes-PORT.conf), under
# ${TMPDIR:-/tmp}/gateway-test-cluster-FIRSTPORT; no data is saved. redis-server is
# installed with apt-get only in CI (CI=true) when missing, as for ensure-redis.sh.
# Timeouts are short (a lost master is marked failed within 1 s) and the
# cluster serves the slots it has while one master is down
# (cluster-require-full-coverage no): what the failover tests need.
set -euo pipefail
url="${REDIS_CLUSTER_URL:-redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002}"
seeds="${url#*://}"; seeds="${seeds##*@}"; seeds="${seeds%%/*}"
IFS=',' read -r -a nodes <<<"$seeds"
[ "${#nodes[@]}" -ge 3 ] || { echo "ensure-cluster: REDIS_CLUSTER_URL must name three nodes" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=redis-lib.sh
. "$here/redis-lib.sh"
state_ok() { redis-cli -h "$1" -p "$2" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

first="${nodes[0]}"
if answers "${first%%:*}" "${first##*:}" && state_ok "${first%%:*}" "${first##*:}"; then
  all=1
  for node in "${nodes[@]}"; do answers "${node%%:*}" "${node##*:}" || all=0; done
  [ "$all" = 1 ] && exit 0
fi
for node in "${nodes[@]}"; do
  case "${node%%:*}" in
    127.0.0.1|localhost|::1) ;;
    *) echo "ensure-cluster: no Redis Cluster answers at $seeds and it is not local; not starting one" >&2; exit 1 ;;
  esac
done
if ! have_redis_server; then
  echo "ensure-cluster: redis-server and redis-cli are needed to start a cluster at $seeds (install them, or set REDIS_CLUSTER_URL)" >&2
  exit 1
fi
dir="${TMPDIR:-/tmp}/gateway-test-cluster-${first##*:}"
running=0
for node in "${nodes[@]}"; do answers "${node%%:*}" "${node##*:}" && running=$((running + 1)); done
# Nothing runs: a fresh cluster (old nodes files would name nodes that are gone).
[ "$running" = 0 ] && rm -rf "$dir"
mkdir -p "$dir"
for node in "${nodes[@]}"; do
  host="${node%%:*}"; port="${node##*:}"
  answers "$host" "$port" && continue
  redis-server --daemonize yes --bind "$host" --port "$port" --save "" --appendonly no \
    --cluster-enabled yes --cluster-config-file "$dir/nodes-$port.conf" --dir "$dir" \
    --cluster-node-timeout 1000 --cluster-require-full-coverage no >/dev/null
  for _ in $(seq 1 50); do answers "$host" "$port" && break; sleep 0.1; done
  answers "$host" "$port" || { echo "ensure-cluster: started redis-server but it does not answer at $host:$port" >&2; exit 1; }
done
if [ "$running" = 0 ]; then
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
fi
for _ in $(seq 1 100); do
  ok=1
  for node in "${nodes[@]}"; do state_ok "${node%%:*}" "${node##*:}" || ok=0; done
  [ "$ok" = 1 ] && exit 0
  sleep 0.1
done
echo "ensure-cluster: the cluster at $seeds did not reach cluster_state:ok" >&2
exit 1
